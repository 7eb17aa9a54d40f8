"""DLPack tensors over gnnd's slots, made by the client library (gnnd_slot_array_dlpack), so torch and numpy
wrap slot memory without a copy.

The tensor's deleter is a C function of libgnnd_client that holds the session's slot mapping until the last
view is gone: no Python runs when torch or numpy frees a view (also at interpreter shutdown), and a batch
kept past the loader's close stays readable."""
import ctypes

from . import _native

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def capsule(session, slot, index, shape=None, strides=None, as_bits=False):
    """A "dltensor" capsule over array `index` of `slot` (at the slot's capacity, or `shape` and `strides` in
    elements from its start), for torch.utils.dlpack.from_dlpack or numpy.from_dlpack. as_bits: bfloat16 as
    uint16 (numpy); float8 always comes as uint8."""
    lib = _native.bound().lib
    managed = ctypes.c_void_p()
    ndim = 0 if shape is None else len(shape)
    shape = None if shape is None else (ctypes.c_int64 * ndim)(*shape)
    strides = None if strides is None else (ctypes.c_int64 * ndim)(*strides)
    _native.check(lib.gnnd_slot_array_dlpack(session, slot, index, ndim, shape, strides, int(as_bits),
                                             ctypes.byref(managed)))
    return _capsule_new(managed, b"dltensor", None)


class Exporter:
    """An object numpy.from_dlpack takes (it asks for __dlpack__ and __dlpack_device__)."""

    def __init__(self, capsule_):
        self._capsule = capsule_

    def __dlpack__(self, stream=None):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU
