"""gnnd: GNN minibatches served by the gnnd daemon, zero-copy from shared memory.

Pure Python over the C ABI (libgnnd_client.so, found via $GNND_CLIENT_LIBRARY, beside this package, or on
the library path). Needs numpy; gives torch tensors when torch is installed."""
from ._native import GnndError
from .loader import ARRAY_NAMES, Batch, Loader

__all__ = ["ARRAY_NAMES", "Batch", "GnndError", "Loader"]
