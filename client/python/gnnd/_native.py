"""ctypes bindings of the C ABI in client/include/gnnd_client.h.

The library is found and bound at first use, not at import, so `import gnnd` works anywhere and a missing
or mismatched library is one clear error when a loader is made (also when its batch arrays, as
gnnd_batch_array_name names them, are not the ones this package knows)."""
import ctypes
import ctypes.util
import os
import pathlib
import sys

# The C ABI this package speaks: the library's major must match and its minor be at least this one.
API_VERSION_MAJOR = 1
API_VERSION_MINOR = 13

GNND_OK = 0
GNND_END_OF_EPOCH = 100
STATUS_NAMES = {
    1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND",
    6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
    10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
    15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}

# The batch's arrays in the order of the canonical layout (gnnd_batch_array_name must agree).
ARRAY_NAMES = ("node_ids", "num_nodes_per_hop", "edge_src", "edge_dst", "num_edges_per_hop", "features", "labels")
MAX_HOPS = 16  # GNND_MAX_HOPS

# gnnd_dtype codes (their names, as torch spells them, come from the library: DTYPE_NAMES) and gnnd_device_type
INT32, INT64, FLOAT32, FLOAT16, BFLOAT16, FLOAT8_E4M3FN = range(6)
DTYPE_NAMES = {}  # gnnd_dtype -> "int32", ..., "bfloat16", "float8_e4m3fn"; filled when the library is bound
DEVICE_CPU, DEVICE_CUDA = 1, 2


class Array(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("shape", ctypes.c_int64 * 2), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32)]


class SessionOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("dataset", ctypes.c_char_p), ("split", ctypes.c_char_p),
                ("batch_size", ctypes.c_int64), ("fanouts", ctypes.POINTER(ctypes.c_int32)),
                ("num_fanouts", ctypes.c_int32), ("seed", ctypes.c_uint64), ("epoch", ctypes.c_uint64),
                ("rank", ctypes.c_int32), ("world_size", ctypes.c_int32), ("shuffle", ctypes.c_int32),
                ("drop_last", ctypes.c_int32), ("num_slots", ctypes.c_int32), ("device", ctypes.c_char_p),
                ("seed_ids", ctypes.POINTER(ctypes.c_int64)), ("num_seed_ids", ctypes.c_int64),
                ("node_type", ctypes.c_char_p), ("fanout_relations", ctypes.POINTER(ctypes.c_char_p)),
                ("num_fanout_relations", ctypes.c_int32), ("edge_split", ctypes.c_char_p),
                ("neg_sampling", ctypes.c_char_p), ("neg_amount", ctypes.c_int32),
                ("strict_negatives", ctypes.c_int32), ("exclude", ctypes.c_char_p),
                ("seed_edges", ctypes.POINTER(ctypes.c_int64)), ("num_seed_edges", ctypes.c_int64),
                ("edge_type", ctypes.c_char_p), ("seed_mask_length", ctypes.c_int64),
                ("slots_may_grow", ctypes.c_int32), ("open_fields", ctypes.c_char_p),
                ("request", ctypes.c_char_p)]

    def __init__(self, **fields):
        super().__init__(size=ctypes.sizeof(SessionOptions), **fields)


class BatchCounts(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_int32), ("num_hops", ctypes.c_int32), ("epoch", ctypes.c_uint64),
                ("step", ctypes.c_int64), ("num_nodes", ctypes.c_int64), ("num_edges", ctypes.c_int64),
                ("num_seeds", ctypes.c_int64), ("num_nodes_per_hop", ctypes.c_int32 * (MAX_HOPS + 1)),
                ("num_edges_per_hop", ctypes.c_int32 * MAX_HOPS)]


MAX_BATCH_COUNTS = 1024  # GNND_MAX_BATCH_COUNTS


class ArrayInfo(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("name", ctypes.c_char_p), ("dtype", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("row_width", ctypes.c_int64), ("count", ctypes.c_int32)]

    def __init__(self):
        super().__init__(size=ctypes.sizeof(ArrayInfo))


class BatchValues(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("slot", ctypes.c_int32), ("epoch", ctypes.c_uint64),
                ("step", ctypes.c_int64), ("num_counts", ctypes.c_int32),
                ("counts", ctypes.c_int64 * MAX_BATCH_COUNTS)]

    def __init__(self):
        super().__init__(size=ctypes.sizeof(BatchValues))


class GnndError(RuntimeError):
    """A failed gnnd call: `code` is the gRPC status name (e.g. "UNAVAILABLE", "INVALID_ARGUMENT"). An error
    in what the caller asked for (INVALID_ARGUMENT, NOT_FOUND, OUT_OF_RANGE) is also a ValueError, as PyG's
    loaders raise for bad arguments: GnndError(...) returns a GnndValueError for those codes."""

    def __new__(cls, code, message):
        if cls is GnndError and code in _VALUE_ERROR_CODES:
            cls = GnndValueError
        return super().__new__(cls, code, message)

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class GnndValueError(GnndError, ValueError):
    """A GnndError about the arguments given: catchable as ValueError (PyG's) and as GnndError."""


_VALUE_ERROR_CODES = ("INVALID_ARGUMENT", "NOT_FOUND", "OUT_OF_RANGE")


class LibraryError(ImportError):
    """libgnnd_client.so is missing, or speaks another version of the C ABI."""


def _candidates():
    """Where the library may be: $GNND_CLIENT_LIBRARY alone if set; else beside the package, the install
    prefixes, the linker's path, and the build tree of the source checkout the package runs from."""
    if os.environ.get("GNND_CLIENT_LIBRARY"):
        return [os.environ["GNND_CLIENT_LIBRARY"]]
    here = pathlib.Path(__file__).resolve().parent
    paths = [here / "libgnnd_client.so"]
    paths += [pathlib.Path(prefix) / "lib" / "libgnnd_client.so" for prefix in (sys.prefix, "/usr/local", "/usr")]
    found = ctypes.util.find_library("gnnd_client")
    if found:
        paths.append(found)
    paths.append(here.parents[2] / "build" / "client" / "libgnnd_client.so")
    return [str(p) for p in paths]


def _load():
    tried = []
    for path in _candidates():
        if os.path.isabs(path) and not os.path.exists(path):
            tried.append(f"{path} (absent)")
            continue
        try:
            return path, ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise LibraryError("libgnnd_client.so not found: set GNND_CLIENT_LIBRARY to its path, or install gnnd "
                       "(cmake --install) where it can be found. Tried: " + "; ".join(tried))


def _bind(path, lib):
    lib.gnnd_api_version.restype = ctypes.c_int32
    major, minor = divmod(lib.gnnd_api_version(), 1000)
    if major != API_VERSION_MAJOR or minor < API_VERSION_MINOR:
        raise LibraryError(f"{path} implements the gnnd client API {major}.{minor}; this package needs "
                           f"{API_VERSION_MAJOR}.{API_VERSION_MINOR} or a later {API_VERSION_MAJOR}.x")
    lib.gnnd_dtype_name.argtypes = [ctypes.c_int32]
    lib.gnnd_dtype_name.restype = ctypes.c_char_p
    while (name := lib.gnnd_dtype_name(len(DTYPE_NAMES))) is not None:
        DTYPE_NAMES[len(DTYPE_NAMES)] = name.decode()
    lib.gnnd_batch_array_name.argtypes = [ctypes.c_int32]
    lib.gnnd_batch_array_name.restype = ctypes.c_char_p
    names = []
    while (name := lib.gnnd_batch_array_name(len(names))) is not None:
        names.append(name.decode())
    if tuple(names) != ARRAY_NAMES:
        raise LibraryError(f"{path} names the batch arrays {names}; this package knows {list(ARRAY_NAMES)}")
    lib.gnnd_default_address.restype = ctypes.c_char_p
    lib.gnnd_connect.argtypes = [ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
    lib.gnnd_client_free.argtypes = [ctypes.c_void_p]
    lib.gnnd_client_free.restype = None
    lib.gnnd_open_session.argtypes = [ctypes.c_void_p, ctypes.POINTER(SessionOptions), ctypes.POINTER(ctypes.c_void_p)]
    lib.gnnd_session_steps.argtypes = [ctypes.c_void_p]
    lib.gnnd_session_steps.restype = ctypes.c_int64
    batch = type("Batch", (ctypes.Structure,), {"_fields_": [
        ("slot", ctypes.c_int32), ("epoch", ctypes.c_uint64), ("step", ctypes.c_int64),
        ("arrays", Array * len(names))]})
    lib.gnnd_next_batch_on_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(batch)]
    lib.gnnd_release_batch_on_stream.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p]
    lib.gnnd_session_slots.argtypes = [ctypes.c_void_p]
    lib.gnnd_session_slots.restype = ctypes.c_int32
    lib.gnnd_batch_input_id.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int64), ctypes.c_int64]
    lib.gnnd_batch_input_id.restype = ctypes.c_int64
    lib.gnnd_slot_arrays.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(Array)]
    lib.gnnd_next_batch_counts.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                                           ctypes.POINTER(BatchCounts)]
    lib.gnnd_session_arrays.argtypes = [ctypes.c_void_p]
    lib.gnnd_session_arrays.restype = ctypes.c_int32
    lib.gnnd_session_counts.argtypes = [ctypes.c_void_p]
    lib.gnnd_session_counts.restype = ctypes.c_int32
    lib.gnnd_session_count_name.argtypes = [ctypes.c_void_p, ctypes.c_int32]
    lib.gnnd_session_count_name.restype = ctypes.c_char_p
    lib.gnnd_session_array_info.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ArrayInfo)]
    lib.gnnd_slot_array.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(Array)]
    lib.gnnd_slot_array_dlpack.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
                                           ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64),
                                           ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
    lib.gnnd_next_batch_values.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                                           ctypes.POINTER(BatchValues)]
    lib.gnnd_start_epoch.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    lib.gnnd_batch_hop_counts.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int32),
                                          ctypes.POINTER(ctypes.c_int32), ctypes.c_int32]
    lib.gnnd_batch_hop_counts.restype = ctypes.c_int32
    lib.gnnd_close_session.argtypes = [ctypes.c_void_p]
    lib.gnnd_close_session.restype = None
    lib.gnnd_last_error.restype = ctypes.c_char_p
    for f in ("gnnd_connect", "gnnd_open_session", "gnnd_start_epoch", "gnnd_next_batch_on_stream",
              "gnnd_release_batch_on_stream", "gnnd_slot_arrays", "gnnd_next_batch_counts",
              "gnnd_session_array_info", "gnnd_slot_array", "gnnd_next_batch_values", "gnnd_slot_array_dlpack"):
        getattr(lib, f).restype = ctypes.c_int
    return _Bound(path, lib, tuple(names), batch)


class _Bound:
    def __init__(self, path, lib, names, batch):
        self.path, self.lib, self.array_names, self.Batch = path, lib, names, batch


_bound = None


def bound():
    """The loaded and checked library: .lib (the ctypes handle), .array_names, .Batch (gnnd_batch), .path."""
    global _bound
    if _bound is None:
        _bound = _bind(*_load())
    return _bound


def check(status):
    """Raises GnndError for a failed call; returns the status otherwise."""
    if status not in (GNND_OK, GNND_END_OF_EPOCH):
        raise GnndError(STATUS_NAMES.get(status, str(status)), bound().lib.gnnd_last_error().decode())
    return status
