"""ctypes bindings of the C ABI in client/include/gnnd_client.h (kept in step with it)."""
import ctypes
import ctypes.util
import os
import pathlib

GNND_OK = 0
GNND_END_OF_EPOCH = 100
STATUS_NAMES = {
    1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND",
    6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
    10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
    15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}

# gnnd_dtype
INT32, INT64, FLOAT32, FLOAT16, BFLOAT16 = range(5)
DEVICE_CPU, DEVICE_CUDA = 1, 2


class Array(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("shape", ctypes.c_int64 * 2), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32)]


class Batch(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_int32), ("epoch", ctypes.c_uint64), ("step", ctypes.c_int64),
                ("arrays", Array * 7)]


class SessionOptions(ctypes.Structure):
    _fields_ = [("dataset", ctypes.c_char_p), ("split", ctypes.c_char_p), ("batch_size", ctypes.c_int64),
                ("fanouts", ctypes.POINTER(ctypes.c_int32)), ("num_fanouts", ctypes.c_int32),
                ("seed", ctypes.c_uint64), ("epoch", ctypes.c_uint64), ("rank", ctypes.c_int32),
                ("world_size", ctypes.c_int32), ("shuffle", ctypes.c_int32), ("drop_last", ctypes.c_int32),
                ("num_slots", ctypes.c_int32), ("device", ctypes.c_char_p)]


class GnndError(RuntimeError):
    """A failed gnnd call: `code` is the gRPC status name (e.g. "UNAVAILABLE", "INVALID_ARGUMENT")."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _find_library():
    candidates = []
    if os.environ.get("GNND_CLIENT_LIBRARY"):
        candidates.append(os.environ["GNND_CLIENT_LIBRARY"])
    here = pathlib.Path(__file__).resolve().parent
    candidates += [str(here / "libgnnd_client.so"), str(here.parents[2] / "build" / "client" / "libgnnd_client.so")]
    found = ctypes.util.find_library("gnnd_client")
    if found:
        candidates.append(found)
    for path in candidates:
        if os.path.exists(path) or not os.path.isabs(path):
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    raise ImportError("libgnnd_client.so not found: set GNND_CLIENT_LIBRARY to its path "
                      "(it is built with gnnd, in build/client/)")


lib = _find_library()
lib.gnnd_connect.argtypes = [ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
lib.gnnd_client_free.argtypes = [ctypes.c_void_p]
lib.gnnd_client_free.restype = None
lib.gnnd_open_session.argtypes = [ctypes.c_void_p, ctypes.POINTER(SessionOptions), ctypes.POINTER(ctypes.c_void_p)]
lib.gnnd_session_steps.argtypes = [ctypes.c_void_p]
lib.gnnd_session_steps.restype = ctypes.c_int64
lib.gnnd_next_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(Batch)]
lib.gnnd_release_batch.argtypes = [ctypes.c_void_p, ctypes.c_int32]
lib.gnnd_next_batch_on_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(Batch)]
lib.gnnd_release_batch_on_stream.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p]
lib.gnnd_start_epoch.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
lib.gnnd_close_session.argtypes = [ctypes.c_void_p]
lib.gnnd_close_session.restype = None
lib.gnnd_last_error.restype = ctypes.c_char_p
for _f in ("gnnd_connect", "gnnd_open_session", "gnnd_next_batch", "gnnd_release_batch", "gnnd_start_epoch",
           "gnnd_next_batch_on_stream", "gnnd_release_batch_on_stream"):
    getattr(lib, _f).restype = ctypes.c_int


def check(status):
    """Raises GnndError for a failed call; returns the status otherwise."""
    if status not in (GNND_OK, GNND_END_OF_EPOCH):
        raise GnndError(STATUS_NAMES.get(status, str(status)), lib.gnnd_last_error().decode())
    return status
