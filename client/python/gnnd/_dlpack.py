"""DLPack capsules for arrays in GPU memory, so torch can wrap gnnd's CUDA slots without a copy.

numpy exports host arrays by itself; device memory has no Python owner, so the DLManagedTensor is built
here with ctypes and kept alive until its consumer calls the deleter."""
import ctypes

from . import _native

_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT = 0, 1, 2, 4
# By gnnd's dtype name. float8 goes as its uint8 bits (not every torch reads DLPack's float8 codes); the
# loader reinterprets it where torch has the dtype.
_DTYPES = {"int32": (_DL_INT, 32), "int64": (_DL_INT, 64), "float32": (_DL_FLOAT, 32), "float16": (_DL_FLOAT, 16),
           "bfloat16": (_DL_BFLOAT, 16), "float8_e4m3fn": (_DL_UINT, 8)}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

_alive = {}  # address of a DLManagedTensor -> the ctypes objects it points into


@_DELETER
def _delete(managed):
    _alive.pop(ctypes.addressof(managed.contents), None)


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def capsule(array, shape=None, strides=None):
    """A "dltensor" capsule for a gnnd_array (any device); consumed by torch.utils.dlpack.from_dlpack. By
    default the array's own shape, compact; `shape` and `strides` (in elements) view its memory otherwise."""
    code, bits = _DTYPES[_native.DTYPE_NAMES[array.dtype]]
    ndim = array.ndim if shape is None else len(shape)
    shape = (ctypes.c_int64 * 2)(*(array.shape if shape is None else shape))
    strides = None if strides is None else (ctypes.c_int64 * 2)(*strides)
    managed = _Managed()
    managed.dl_tensor = _Tensor(data=array.data, device=_Device(array.device_type, array.device_id),
                                ndim=ndim, dtype=_DataType(code, bits, 1), shape=shape,
                                strides=strides, byte_offset=0)
    managed.deleter = _delete
    _alive[ctypes.addressof(managed)] = (managed, shape, strides)
    return _capsule_new(ctypes.addressof(managed), b"dltensor", None)
