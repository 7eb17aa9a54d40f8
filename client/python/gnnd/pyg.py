"""PyG-shaped minibatches from gnnd: a drop-in for torch_geometric.loader.NeighborLoader.

    from gnnd.pyg import NeighborLoader
    loader = NeighborLoader(data, num_neighbors=[15, 10, 5], batch_size=1024, input_nodes="train",
                            shuffle=True, dataset="products", device="cuda:0")
    for batch in loader:
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
        loss = F.cross_entropy(out, batch.y[:batch.batch_size])

gnnd holds the graph and the features, so `data` is not read (pass it or None). A batch has x (the
features of n_id, zero-copy from gnnd's slot), edge_index (2 x E, int64, src -> dst, ordered by hop: the one
array made per batch, from gnnd's int32 local indices), y (the seeds' labels; PyG's y[:batch_size]), n_id,
batch_size, num_sampled_nodes and num_sampled_edges (per hop, as PyG's trim_to_layer wants them). It is a
torch_geometric.data.Data when PyG is importable, a gnnd.pyg.Batch with the same attributes otherwise.
x, y and n_id stay valid until the next batch is fetched: copy what must outlive the step.
"""
import torch

from .loader import Loader

# PyG arguments that only tune PyG's own worker processes: gnnd does that work, so they are accepted and unused.
_WORKER_ARGUMENTS = {"num_workers", "persistent_workers", "pin_memory", "prefetch_factor", "worker_init_fn"}


class Batch:
    """A PyG-shaped batch, for when torch_geometric is not installed."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)

    def __getitem__(self, key):
        return getattr(self, key)

    def __repr__(self):
        return (f"Batch(x={tuple(self.x.shape)}, edge_index={tuple(self.edge_index.shape)}, "
                f"batch_size={self.batch_size})")


def _distributed_default(value, getter):
    if value is not None:
        return value
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return getter()
    return None


def _input_nodes(input_nodes):
    """(split name, seed ids) for PyG's input_nodes: a split name, node ids, or a boolean mask over nodes."""
    if input_nodes is None:
        return "train", None
    if isinstance(input_nodes, str):
        return input_nodes, None
    if isinstance(input_nodes, tuple):
        raise ValueError("input_nodes: heterogeneous graphs (node type, ids) are not supported by gnnd")
    ids = torch.as_tensor(input_nodes)
    if ids.dtype == torch.bool:
        ids = ids.nonzero().view(-1)
    return None, ids


class NeighborLoader:
    """PyG's NeighborLoader arguments (num_neighbors, input_nodes, batch_size, shuffle, drop_last) plus
    gnnd's: dataset (required), address, device ("cpu" or "cuda:N": where gnnd samples and where the
    batch lives), seed (the shuffle and sampling seed), epoch (the first one), rank and world_size (by
    default torch.distributed's when it is initialized), num_slots, timeout_ms.

    input_nodes: a split name ("train", "valid", "test"), node ids, or a boolean mask over the nodes;
    None means "train" (PyG would take every node). len(loader) is the steps of this rank per epoch (equal
    on every rank); set_epoch(e) picks the epoch (its shuffle order) of the next iteration.
    """

    def __init__(self, data=None, num_neighbors=None, input_nodes=None, batch_size=1, shuffle=False,
                 drop_last=False, *, dataset, address=None, device="cpu", seed=0, epoch=0, rank=None,
                 world_size=None, num_slots=0, timeout_ms=5000, **pyg_arguments):
        unsupported = sorted(set(pyg_arguments) - _WORKER_ARGUMENTS)
        if unsupported:
            raise TypeError(f"gnnd.pyg.NeighborLoader does not support {', '.join(unsupported)} "
                            "(gnnd samples uniformly without replacement, in-edges, homogeneous graphs)")
        if not num_neighbors:
            raise ValueError("num_neighbors: one fanout per hop is required, e.g. [15, 10, 5]")
        del data  # gnnd serves the graph and its features
        split, seed_ids = _input_nodes(input_nodes)
        self._loader = Loader(
            address=address, dataset=dataset, split=split, seed_ids=seed_ids, batch_size=batch_size,
            fanouts=list(num_neighbors), seed=seed, epoch=epoch,
            rank=_distributed_default(rank, torch.distributed.get_rank) or 0,
            world_size=_distributed_default(world_size, torch.distributed.get_world_size) or 1,
            shuffle=shuffle, drop_last=drop_last, num_slots=num_slots, device=device, output="torch",
            timeout_ms=timeout_ms)
        self._loader._edge_pairs = True  # batches carry both edge arrays as one view: edge_index in one copy
        try:
            from torch_geometric.data import Data
            self._make = Data
        except ImportError:
            self._make = Batch

    def __len__(self):
        return len(self._loader)

    def set_epoch(self, epoch):
        self._loader.set_epoch(epoch)

    @property
    def epoch(self):
        return self._loader.epoch

    def __iter__(self):
        for batch in self._loader:
            yield self._make(**to_pyg(batch))

    def close(self):
        """Ends the gnnd session (also when the loader is garbage-collected)."""
        self._loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def to_pyg(batch):
    """The PyG attributes of a gnnd.Batch (torch output), as a dict."""
    pair = getattr(batch, "_edge_pair", None)
    if pair is not None:  # one conversion kernel instead of an allocation and two copies
        edge_index = pair.to(torch.int64, memory_format=torch.contiguous_format)
    else:
        edge_index = torch.empty((2, batch.edge_src.numel()), dtype=torch.int64, device=batch.edge_src.device)
        edge_index[0].copy_(batch.edge_src)
        edge_index[1].copy_(batch.edge_dst)
    return dict(x=batch.features, edge_index=edge_index, y=batch.labels, n_id=batch.node_ids,
                batch_size=batch.nodes_per_hop[0], num_sampled_nodes=list(batch.nodes_per_hop),
                num_sampled_edges=list(batch.edges_per_hop))
