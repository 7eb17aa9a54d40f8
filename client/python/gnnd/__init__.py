"""gnnd: GNN minibatches served by the gnnd daemon, zero-copy from its slots.

Pure Python over the C ABI (libgnnd_client.so, found at first use via $GNND_CLIENT_LIBRARY, an installed
location, or the build tree). Needs numpy; gives torch tensors when torch is installed."""
from ._native import GnndError, GnndValueError, LibraryError
from .loader import Batch, Loader, TypedBatch

__all__ = ["ARRAY_NAMES", "Batch", "GnndError", "GnndValueError", "LibraryError", "Loader", "TypedBatch"]


def __getattr__(name):
    if name == "ARRAY_NAMES":  # a batch's array names, as the library defines them (loads it)
        from . import _native
        return _native.bound().array_names
    raise AttributeError(f"module 'gnnd' has no attribute {name!r}")
