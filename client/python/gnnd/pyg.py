"""PyG-shaped minibatches from gnnd: a drop-in for torch_geometric.loader.NeighborLoader.

    from gnnd.pyg import NeighborLoader
    loader = NeighborLoader(data, num_neighbors=[15, 10, 5], batch_size=1024, input_nodes="train",
                            shuffle=True, dataset="products", device="cuda:0")
    for batch in loader:
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
        loss = F.cross_entropy(out, batch.y[:batch.batch_size])

Typed datasets (PyG's HeteroData): num_neighbors is one list for every relation or a dict of lists by edge
type, input_nodes is (node type, split name / ids / mask), and a batch is a torch_geometric.data.HeteroData
(a gnnd.pyg.HeteroBatch with the same attributes without PyG): per node type batch[t].n_id, .x (types with
features), .num_sampled_nodes, and on the seed type .y (the seeds' labels) and .batch_size; per edge type
batch[et].edge_index (int64 local indices, src -> dst) and .num_sampled_edges; batch.node_types,
batch.edge_types, batch.x_dict, batch.edge_index_dict.

    loader = NeighborLoader(data, num_neighbors={("paper", "cites", "paper"): [15, 10], ...},
                            input_nodes=("paper", "train"), batch_size=1024, dataset="mag")
    for batch in loader:
        out = model(batch.x_dict, batch.edge_index_dict)["paper"][:batch["paper"].batch_size]

gnnd holds the graph and the features, so `data` is not read (pass it or None). A batch has x (the
features of n_id, zero-copy from gnnd's slot), edge_index (2 x E, int64, src -> dst, ordered by hop: the one
array made per batch, from gnnd's int32 local indices), y (the seeds' labels; PyG's y[:batch_size]), n_id,
batch_size, num_sampled_nodes and num_sampled_edges (per hop, as PyG's trim_to_layer wants them). It is a
torch_geometric.data.Data when PyG is importable, a gnnd.pyg.Batch with the same attributes otherwise.
x, y and n_id stay valid until the next batch is fetched: copy what must outlive the step.
"""
import contextlib
import copy
import pickle
import sys

import torch

from . import _subgraph
from ._save import SaveError, save
from .loader import Loader, relation_key

# PyG arguments that only tune PyG's own worker processes: gnnd does that work, so they are accepted and ignored
# (with one warning).
_WORKER_ARGUMENTS = ("num_workers", "persistent_workers", "pin_memory", "prefetch_factor", "worker_init_fn",
                     "filter_per_worker")
# PyG arguments gnnd takes at PyG's default only: the default (what gnnd does) and why another value is refused.
_FIXED_ARGUMENTS = {
    "is_sorted": (False, None),  # a hint about data's edge_index, which gnnd does not read
    "neighbor_sampler": (None, "gnnd is the sampler"),
    "transform_sampler_output": (None, "gnnd makes the batch: pass transform= to change it"),
}
# PyG's subgraph_type values: the sampled edges as drawn, with each one's reverse too, or every edge between the
# sampled nodes.
_SUBGRAPH_TYPES = ("directional", "bidirectional", "induced")
_SPLIT_NAMES = ("train", "valid", "test", "all")  # "all": every node (PyG's input_nodes=None)


def _check_arguments(loader, pyg_arguments):
    """Accepts PyG's worker arguments with one warning, its other arguments at their default (what gnnd
    does), and refuses any other value saying why. Returns the subgraph type (PyG's enum as its value)."""
    import warnings
    subgraph_type = getattr(pyg_arguments.get("subgraph_type"), "value", pyg_arguments.get("subgraph_type"))
    if subgraph_type is None:
        subgraph_type = "directional"
    if not pyg_arguments.get("directed", True):  # PyG's deprecated spelling of induced, and its words
        subgraph_type = "induced"
        warnings.warn("The usage of the 'directed' argument in 'NeighborSampler' is deprecated. Use "
                      "`subgraph_type='induced'` instead.", stacklevel=3)
    if subgraph_type not in _SUBGRAPH_TYPES:
        raise ValueError(f"gnnd.pyg.{loader}: subgraph_type={subgraph_type!r}: one of 'directional', "
                         "'bidirectional', 'induced'")
    for name, value in pyg_arguments.items():
        if name in _WORKER_ARGUMENTS or name in ("subgraph_type", "directed"):
            continue
        if name not in _FIXED_ARGUMENTS:
            raise TypeError(f"gnnd.pyg.{loader}: unexpected argument {name!r}")
        default, reason = _FIXED_ARGUMENTS[name]
        value = getattr(value, "value", value)  # PyG's enums (SubgraphType.directional) as their values
        if reason is not None and value != default:
            raise ValueError(f"gnnd.pyg.{loader}: {name}={value!r} is not supported ({reason})")
    ignored = [name for name in _WORKER_ARGUMENTS if name in pyg_arguments]
    if ignored:
        warnings.warn(f"gnnd.pyg.{loader}: {', '.join(ignored)} ignored: gnnd samples and gathers in its own "
                      "threads and hands each batch over in place, so no worker processes or pinned copies "
                      "are needed", stacklevel=3)
    return subgraph_type


def _moved(attributes, device, non_blocking):
    for key, value in attributes.items():
        if isinstance(value, torch.Tensor):
            attributes[key] = value.to(device, non_blocking=non_blocking)


class Batch:
    """A PyG-shaped batch, for when torch_geometric is not installed: the attributes of PyG's Data, and its
    to(device), keys(), num_nodes."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)

    def __getitem__(self, key):
        return getattr(self, key)

    def __contains__(self, key):
        return key in self.__dict__

    def keys(self):
        return [k for k, v in self.__dict__.items() if v is not None]

    @property
    def num_nodes(self):
        return len(self.n_id)

    def to(self, device, non_blocking=False):
        """Moves every tensor to `device`, in place, and returns the batch (as Data.to)."""
        _moved(self.__dict__, device, non_blocking)
        return self

    def __repr__(self):
        return "Batch(" + ", ".join(f"{k}={tuple(v.shape) if hasattr(v, 'shape') else v}"
                                    for k, v in self.__dict__.items()) + ")"


class _Store:
    """One node or edge type's attributes in a HeteroBatch."""

    def __init__(self, attributes=()):
        self.__dict__.update(attributes)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        setattr(self, key, value)

    def __contains__(self, key):
        return key in self.__dict__

    def __repr__(self):
        return "{" + ", ".join(f"{k}={tuple(v.shape) if hasattr(v, 'shape') else v}"
                               for k, v in self.__dict__.items()) + "}"


class HeteroBatch:
    """A PyG-shaped typed batch, for when torch_geometric is not installed: batch[node_type] and
    batch[(src, rel, dst)] hold the attributes, as HeteroData's stores do."""

    def __init__(self):
        self._stores = {}

    @classmethod
    def from_dict(cls, mapping):
        """As HeteroData.from_dict: {node type or edge type: {attribute: value}}."""
        out = cls()
        out._stores = {key: _Store(attributes) for key, attributes in mapping.items()}
        return out

    def __getitem__(self, key):
        return self._stores.setdefault(key, _Store())

    def keys(self):
        """Every attribute name of any store (as HeteroData.keys())."""
        return sorted({k for store in self._stores.values() for k in store.__dict__})

    def metadata(self):
        return self.node_types, self.edge_types

    @property
    def num_nodes(self):
        return sum(self._stores[t].num_nodes for t in self.node_types)

    def to(self, device, non_blocking=False):
        """Moves every tensor of every store to `device`, in place, and returns the batch."""
        for store in self._stores.values():
            _moved(store.__dict__, device, non_blocking)
        return self

    @property
    def node_types(self):
        return [k for k in self._stores if isinstance(k, str)]

    @property
    def edge_types(self):
        return [k for k in self._stores if isinstance(k, tuple)]

    def _collect(self, key, types):
        return {t: self._stores[t][key] for t in types if key in self._stores[t]}

    @property
    def x_dict(self):
        return self._collect("x", self.node_types)

    @property
    def edge_index_dict(self):
        return self._collect("edge_index", self.edge_types)

    def __repr__(self):
        return "HeteroBatch(" + ", ".join(f"{k}={v!r}" for k, v in self._stores.items()) + ")"


def _distributed_default(value, getter):
    if value is not None:
        return value
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return getter()
    return None


def _fanouts(num_neighbors):
    """(gnnd's fanouts, no hops) of PyG's num_neighbors: one list for every relation or a dict of lists by edge
    type ((src, rel, dst), or (src, dst) where one relation links them). [] (PyG: the seeds alone, no hops)
    goes as one hop that draws none."""
    if num_neighbors is None:
        raise ValueError("num_neighbors: one fanout per hop is required, e.g. [15, 10, 5] (-1: all, 0: none)")
    if isinstance(num_neighbors, dict):
        fanouts = {relation_key(k): list(v) for k, v in num_neighbors.items()}
        hops = {len(v) for v in fanouts.values()}
        if len(hops) > 1:  # PyG's words
            raise ValueError(f"Number of hops must be the same across all edge types (got {len(hops)} different "
                             "number of hops)")
        if fanouts and not any(fanouts.values()):
            return {k: [0] for k in fanouts}, True
        return fanouts, False
    fanouts = list(num_neighbors)
    return (fanouts, False) if fanouts else ([0], True)


def _arguments(local_variables):
    """A loader's arguments as its __init__ got them (to open another session the same way)."""
    arguments = {k: v for k, v in local_variables.items() if k not in ("self", "__class__", "pyg_arguments")}
    return dict(arguments, **local_variables.get("pyg_arguments", {}))


def _known_inputs(given, what):
    """The ids (or pairs) a loader's inputs were given as, for loader(index): a split gnnd holds is not known
    here."""
    if isinstance(given, str) or given is None:
        raise ValueError(f"loader(index): {what} is the split {given or 'train'!r}, whose ids gnnd holds; give "
                         f"the ids themselves to call the loader with positions among them")
    return torch.as_tensor(given)


def _owned(mapping):
    """A batch's attributes owning their tensors (a slot's views are valid until its next batch)."""
    return {k: _owned(v) if isinstance(v, dict) else v.clone() if isinstance(v, torch.Tensor) else copy.copy(v)
            for k, v in mapping.items()}


def _input_store(loader):
    """The typed store holding input_id: the seed type's (node batches) or the seed relation's (link)."""
    return loader.edge_type if isinstance(loader, LinkNeighborLoader) else loader._loader._views.seed_type


def _input_nodes(input_nodes):
    """(node type, split name, seed ids) for PyG's input_nodes: a node type alone or (node type, None) (every
    node of that type, as PyG), (node type, split name | ids | mask), or for a homogeneous graph a split
    name, node ids or a boolean mask over the nodes (None: "train")."""
    node_type = None
    if isinstance(input_nodes, tuple):
        if len(input_nodes) != 2 or not isinstance(input_nodes[0], str):
            raise ValueError(f"input_nodes: (node type, None | split name | ids | mask) expected, got {input_nodes!r}")
        node_type, input_nodes = input_nodes
        if input_nodes is None:
            return node_type, "all", None
    if input_nodes is None:
        return node_type, "train", None
    if isinstance(input_nodes, str):
        if node_type is None and input_nodes not in _SPLIT_NAMES:
            return input_nodes, "all", None  # a node type: every node of it
        return node_type, input_nodes, None
    ids = torch.as_tensor(input_nodes)
    if ids.dim() != 1:  # as PyG's NodeLoader
        raise ValueError(f"input_nodes: node ids or a boolean mask, one dimension, expected; got shape "
                         f"{tuple(ids.shape)}")
    return node_type, None, ids  # a mask goes as it is: gnnd checks it has one entry per node


class _SessionLoader:
    """What every PyG-shaped loader does with the gnnd.Loader it wraps (self._loader)."""

    def _open(self, rank, world_size, **options):
        """Opens the session: rank and world_size default to torch.distributed's, batches are torch tensors
        with both edge arrays as one view (edge_index in one copy)."""
        if self._subgraph_type == "induced" and options.get("disjoint"):  # PyG's words
            raise ValueError("'disjoint' sampling not supported for neighbor sampling with `subgraph_type='induced'`")
        self._loader = Loader(rank=_distributed_default(rank, torch.distributed.get_rank) or 0,
                              world_size=_distributed_default(world_size, torch.distributed.get_world_size) or 1,
                              output="torch", induced=self._subgraph_type == "induced", **options)
        self._loader._edge_pairs = True

    def __len__(self):
        return len(self._loader)

    def __call__(self, index):
        """PyG's loader(index): the batch of the inputs at positions `index` (of input_nodes; of
        edge_label_index's pairs), made by a session of its own and owning its tensors; input_id is `index`'s."""
        index = torch.as_tensor(index, dtype=torch.int64).reshape(-1)
        inputs, input_id = self._inputs_at(index)
        arguments = dict(self._arguments, batch_size=max(len(index), 1), shuffle=False, drop_last=False, rank=0,
                         world_size=1, transform=None, **inputs)
        with type(self)(**arguments) as one:
            mapping = _owned(next(one._mappings()))
            store = mapping[_input_store(one)] if one._typed else mapping
        store["input_id"] = input_id[store["input_id"].cpu()].to(store["input_id"].device)
        self._label(mapping)  # the labels of those inputs among this loader's
        batch = self._batch(mapping)
        return batch if self._transform is None else self._transform(batch)

    def _as_pyg(self, mapping):
        """A batch's attributes as PyG's: with num_neighbors=[] (no hops; served as one hop that draws none)
        num_sampled_nodes holds the seeds' count alone and num_sampled_edges nothing; with
        subgraph_type="bidirectional" the edges also reversed (gnnd._subgraph); "induced" batches' edges are
        not by hop, so neither count is kept (PyG's induced sampling gives none)."""
        if self._subgraph_type == "induced":
            for store in [mapping] + [v for v in mapping.values() if isinstance(v, dict)]:
                store.pop("num_sampled_nodes", None)
                store.pop("num_sampled_edges", None)
        elif self._no_hops:
            for store in [mapping] + [v for v in mapping.values() if isinstance(v, dict)]:
                if "num_sampled_nodes" in store:
                    store["num_sampled_nodes"] = store["num_sampled_nodes"][:1]
                if "num_sampled_edges" in store:
                    store["num_sampled_edges"] = []
        self._label(mapping)
        if self._subgraph_type == "bidirectional":
            edge_data = self._loader._views.edge_data
            if self._typed:
                return _subgraph.typed(mapping, {et: edge_data[relation_key(et) + "."] for et in mapping
                                                 if isinstance(et, tuple)})
            return _subgraph.homogeneous(mapping, edge_data[""])
        return mapping

    def _label(self, mapping):
        """Sets a batch's labels where the loader has its own (LinkNeighborLoader's edge_label)."""

    def __repr__(self):
        return f"{self.__class__.__name__}()"  # as PyG's loaders

    def __iter__(self):
        """An epoch's batches, each through `transform` when one is given (as PyG's loaders apply it)."""
        for mapping in self._mappings():
            batch = self._batch(mapping)
            yield batch if self._transform is None else self._transform(batch)

    def _batch(self, mapping):
        return self._make.from_dict(mapping) if self._typed else self._make(**mapping)

    def set_epoch(self, epoch):
        self._loader.set_epoch(epoch)

    @property
    def epoch(self):
        return self._loader.epoch

    def close(self):
        """Ends the gnnd session (also when the loader is garbage-collected)."""
        self._loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class NeighborLoader(_SessionLoader):
    """PyG's NeighborLoader arguments (num_neighbors, input_nodes, batch_size, shuffle, drop_last) plus
    gnnd's: dataset (required), address, device ("cpu" or "cuda:N": where gnnd samples and where the
    batch lives), seed (the shuffle and sampling seed), epoch (the first one), rank and world_size (by
    default torch.distributed's when it is initialized), num_slots, timeout_ms, edge_attrs, open_fields, producer
    (gnnd.Loader's). Batches carry e_id and the edge attributes (edge_attr, ...) where the dataset has them.
    weight_attr: as PyG's, the edge attribute weighting the draws (gnnd.Loader's).

    Time, as PyG's: time_attr ("node_time": the dataset's node times; else an int64 edge attribute, e.g.
    "time"), input_time (each input node's time; with a split name, the split's imported times are used, else
    each seed's own node time), temporal_strategy ("uniform" or "last"), time_window (only in-edges from
    seed time - W to seed time: gnnd.Loader's), disjoint. Such batches carry batch
    (each node's seed position) and seed_time (typed: on the node types' stores and the seed type's).

    LABOR (GraphBolt's LayerNeighborSampler; PyG has none): labor=True draws LABOR-0 instead of the uniform
    rule (fewer distinct nodes a batch, fanout in-edges per node in expectation); batches then carry
    edge_weight (each edge's 1 / inclusion probability: pass it to a model's weighted aggregation for an
    unbiased mean); layer_dependency, batch_dependency as GraphBolt's (gnnd.Loader says how).

    input_nodes: a split name ("train", "valid", "test"), node ids, or a boolean mask over the nodes;
    None means "train" (PyG would take every node). Typed: a node type alone or (node type, None) is every
    node of that type, as PyG; (node type, split name | ids | mask). len(loader) is the steps of this rank
    per epoch (equal on every rank); set_epoch(e) picks the epoch (its shuffle order) of the next iteration.
    loader(index), as PyG's: the batch of the inputs at those positions (ids, a mask, a node type or "all").
    num_neighbors: -1 takes every neighbor, 0 none, [] the seeds alone; a dict's keys (src, rel, dst) or
    (src, dst) where one relation links them. transform is applied to each batch, as PyG's.
    subgraph_type: "directional" (PyG's default), "bidirectional" (PyG's to_bidirectional of the sample, for
    link loaders too) or "induced" (every edge between the sampled nodes, with e_id and edge attributes, as
    PyG's; not with disjoint or time_attr). Node attributes of the dataset (gnnd.pyg.save keeps every one)
    come in each batch under their names, the rows of n_id. PyG's worker arguments (num_workers, pin_memory,
    ...) are ignored with one warning; its other sampling arguments are taken at their defaults (what gnnd
    does), any other value refused saying why.
    """

    def __init__(self, data=None, num_neighbors=None, input_nodes=None, input_time=None, *, batch_size=1,
                 shuffle=False, drop_last=False, dataset, address=None, device="cpu", seed=0, epoch=0, rank=None,
                 world_size=None, num_slots=0, timeout_ms=5000, transform=None, weight_attr=None, edge_attrs=None,
                 time_attr=None, temporal_strategy="uniform", time_window=None, disjoint=False, labor=False,
                 replace=False,
                 layer_dependency=False, batch_dependency=0, open_fields=None, producer=None, **pyg_arguments):
        self._arguments = _arguments(locals())
        self._subgraph_type = _check_arguments("NeighborLoader", pyg_arguments)
        self._transform = transform
        fanouts, self._no_hops = _fanouts(num_neighbors)
        del data  # gnnd serves the graph and its features
        node_type, split, seed_ids = _input_nodes(input_nodes)
        if input_time is not None and time_attr is None:  # PyG's words
            raise ValueError("Received conflicting 'input_time' and 'time_attr' arguments: 'input_time' is set "
                             "while 'time_attr' is not set.")
        if input_time is not None and split == "all":  # every node, one time each: node v's is input_time[v]
            split, seed_ids = None, torch.arange(len(input_time))
        if input_time is not None and seed_ids is None:
            raise ValueError(f"gnnd.pyg.NeighborLoader: input_time with input_nodes={input_nodes!r}: give the "
                             "input nodes as ids or a mask, or import the split's times (gnnctl import "
                             "--split-time) and leave input_time None")
        self._open(rank, world_size, address=address, dataset=dataset, split=split, seed_ids=seed_ids,
                   node_type=node_type, batch_size=batch_size, fanouts=fanouts, seed=seed, epoch=epoch,
                   shuffle=shuffle, drop_last=drop_last, num_slots=num_slots, device=device, timeout_ms=timeout_ms,
                   weight_attr=weight_attr, edge_attrs=edge_attrs, time_attr=time_attr,
                   temporal_strategy=None if time_attr is None and temporal_strategy == "uniform"
                   else temporal_strategy, time_window=time_window, replace=replace, disjoint=disjoint,
                   seed_times=input_time,
                   labor=labor,
                   layer_dependency=layer_dependency, batch_dependency=batch_dependency, open_fields=open_fields,
                   producer=producer)
        self._typed = not self._loader._views.homogeneous
        try:
            from torch_geometric.data import Data, HeteroData
            self._make = HeteroData if self._typed else Data
        except ImportError:
            self._make = HeteroBatch if self._typed else Batch

    def _inputs_at(self, index):
        """The input_nodes (and input_time) of a loader over the inputs at positions `index`."""
        node_type, given = None, self._arguments["input_nodes"]
        if isinstance(given, tuple):
            node_type, given = given
        elif isinstance(given, str) and given not in _SPLIT_NAMES:
            node_type, given = given, None
        input_id = index
        if (given is None and node_type is not None) or (isinstance(given, str) and given == "all"):
            ids = index  # every node of the type: positions are ids
        else:
            ids = _known_inputs(given, "input_nodes")
            if ids.dtype == torch.bool:
                ids = input_id = ids.nonzero().reshape(-1)[index]  # a mask's input_id is the node (PyG's)
            else:
                ids = ids[index]
        arguments = {"input_nodes": ids if node_type is None else (node_type, ids)}
        if self._arguments["input_time"] is not None:
            arguments["input_time"] = torch.as_tensor(self._arguments["input_time"])[index]
        return arguments, input_id

    def _mappings(self):
        if self._typed:
            reader = _HeteroReader(self._loader._views)
            for batch in self._loader:
                yield self._as_pyg(reader.mapping(batch))
        else:
            for batch in self._loader:
                yield self._as_pyg(to_pyg(batch))


def _negatives(neg_sampling, neg_sampling_ratio):
    """gnnd.Loader's negative arguments from PyG's neg_sampling ("binary", "triplet", a dict or an object with
    mode, amount, src_weight, dst_weight) or its older neg_sampling_ratio (binary negatives)."""
    if neg_sampling is None:
        if neg_sampling_ratio:
            neg_sampling = {"mode": "binary", "amount": neg_sampling_ratio}
        else:
            return dict(neg_sampling="none")
    if isinstance(neg_sampling, str):
        neg_sampling = {"mode": neg_sampling}
    elif not isinstance(neg_sampling, dict):  # torch_geometric.sampler.NegativeSampling
        neg_sampling = {"mode": str(getattr(neg_sampling.mode, "value", neg_sampling.mode)),
                        "amount": neg_sampling.amount, "src_weight": getattr(neg_sampling, "src_weight", None),
                        "dst_weight": getattr(neg_sampling, "dst_weight", None)}
    neg_sampling = dict(neg_sampling)  # the caller's stays as given
    unknown = set(neg_sampling) - {"mode", "amount", "strict", "src_weight", "dst_weight"}
    if unknown:
        raise ValueError(f"neg_sampling: unknown keys {sorted(unknown)} (mode, amount, strict, src_weight, dst_weight)")
    mode, amount = neg_sampling.get("mode"), neg_sampling.get("amount", 1)
    if mode not in ("binary", "triplet", "fixed"):
        raise ValueError(f"neg_sampling: mode {mode!r} (binary, triplet, or fixed: the edge split's own negatives)")
    if amount <= 0:  # PyG's words (NegativeSampling's)
        raise ValueError(f"The attribute 'amount' needs to be positive for 'NegativeSampling' (got {amount})")
    if amount != int(amount) and mode != "binary":
        raise ValueError(f"The attribute 'amount' needs to be an integer for 'NegativeSampling' with '{mode}' "
                         f"negative sampling (got {amount}).")
    # Binary: ceil(P x amount) negatives a batch of P positives, as PyG's (a fraction goes to gnnd as neg_ratio).
    # Weights: each endpoint drawn in proportion (gnnd checks their counts, in PyG's words).
    return dict(neg_sampling=mode, neg_amount=int(amount) if amount == int(amount) else float(amount),
                strict_negatives=bool(neg_sampling.get("strict", False)),
                neg_src_weight=neg_sampling.get("src_weight"), neg_dst_weight=neg_sampling.get("dst_weight"))


class LinkNeighborLoader(_SessionLoader):
    """PyG's LinkNeighborLoader arguments (num_neighbors, edge_label_index, edge_label, neg_sampling,
    neg_sampling_ratio, batch_size, shuffle, drop_last; neg_sampling="fixed" serves the edge split's fixed
    negatives, e.g. OGB's 1000 per evaluation edge, as triplets) plus gnnd's: dataset (required), exclude (None, "self"
    or "reverse": the batch's seed edges, and with "reverse" their reverses, are never message-passing edges,
    while every node still gets min(fanout, in-degree - excluded) neighbors), address, device ("cpu" or
    "cuda:N"), seed, epoch, rank and world_size (by default torch.distributed's), num_slots, timeout_ms,
    weight_attr, edge_attrs, open_fields, producer (gnnd.Loader's).

    edge_label_index: the name of one of the dataset's edge splits ("train", "valid", "test"; None means
    "train"): gnnd holds the seed edges and their labels, so edge_label must be None; or a (2, E) tensor of
    node ids, the seed pairs themselves (input_id their positions), with edge_label (one per pair) or without
    (then, as PyG, batches have edge_label only with binary negatives: 1. / 0.). neg_sampling: "binary",
    "triplet", dict(mode=..., amount=..., strict=...) or PyG's NegativeSampling (strict: a negative is never
    an edge). A batch is a torch_geometric.data.Data (a gnnd.pyg.Batch without PyG) with n_id, x (when the
    graph has features), edge_index, edge_label_index (2 x L, int64 local indices: the positives, then
    their binary negatives), edge_label (1. / 0., or the split's labels + 1 and 0 for negatives, as PyG),
    input_id (each positive's position in its split), num_sampled_nodes, num_sampled_edges; for triplets
    src_index, dst_pos_index and dst_neg_index (positives x amount) instead of edge_label_index and
    edge_label.

    Typed graphs: edge_label_index=(edge_type, split name or (2, E) tensor), or an edge type alone (its "train"
    split); num_neighbors one list or a dict per relation. A batch is a HeteroData (a gnnd.pyg.HeteroBatch
    without PyG): per node type n_id, x, num_sampled_nodes; per relation edge_index, num_sampled_edges; the
    seed relation's store edge_label_index, edge_label and input_id (triplets: src_index in the source type's
    store, dst_pos_index and dst_neg_index in the destination type's), as PyG's typed LinkNeighborLoader.
    exclude="reverse" also excludes v -> u in the reverse relation (dst___rev_REL___src).

    Time, as PyG's: time_attr ("node_time" or an int64 edge attribute), edge_label_time (one per given pair;
    with a split name, the split's SPLIT_edge_time.npy), temporal_strategy, time_window, disjoint. Such batches
    are disjoint (each endpoint its own subgraph) and carry batch (each node's positive, PyG's batch % num_pos)
    and edge_label_time (triplets: seed_time, each positive's; typed: in the seed relation's store). With node
    times, negatives are drawn among the nodes no newer than their pair.

    labor, layer_dependency, batch_dependency: LABOR sampling, as NeighborLoader's. loader(index): the batch of
    the given pairs at those positions, as PyG's.
    """

    def __init__(self, data=None, num_neighbors=None, edge_label_index=None, edge_label=None, edge_label_time=None,
                 *, neg_sampling=None, neg_sampling_ratio=None, batch_size=1, shuffle=False, drop_last=False,
                 dataset, exclude=None, address=None, device="cpu", seed=0, epoch=0, rank=None, world_size=None,
                 num_slots=0, timeout_ms=5000, transform=None, weight_attr=None, edge_attrs=None, time_attr=None,
                 temporal_strategy="uniform", time_window=None, disjoint=False, labor=False, replace=False,
                 layer_dependency=False, batch_dependency=0, open_fields=None, producer=None, **pyg_arguments):
        self._arguments = _arguments(locals())
        self._subgraph_type = _check_arguments("LinkNeighborLoader", pyg_arguments)
        self._transform = transform
        fanouts, self._no_hops = _fanouts(num_neighbors)
        if edge_label_index is None:
            edge_label_index = "train"
        edge_type, edge_label_index = _edge_type(edge_label_index)
        split, pairs = (edge_label_index, None) if isinstance(edge_label_index, str) else (None, edge_label_index)
        del data  # gnnd serves the graph, its features and its edge splits
        negatives = _negatives(neg_sampling, neg_sampling_ratio)
        mode = negatives["neg_sampling"]
        self._given_pairs, self._edge_label = pairs is not None, _edge_labels(edge_label, pairs, mode, device)
        self._negatives = mode != "none"
        if pairs is not None and (edge_label_time is not None) != (time_attr is not None):  # PyG's words
            raise ValueError(
                "Received conflicting 'edge_label_time' and 'time_attr' arguments: 'edge_label_time' is "
                f"{'set' if edge_label_time is not None else 'not set'} while 'time_attr' is "
                f"{'set' if time_attr is not None else 'not set'}. Both arguments must be provided for temporal "
                "sampling.")
        if edge_label_time is not None and pairs is None:
            raise ValueError("gnnd.pyg.LinkNeighborLoader: edge_label_time goes with given pairs (a tensor "
                             "edge_label_index); an edge split's times come with it (SPLIT_edge_time.npy)")
        self._open(rank, world_size, address=address, dataset=dataset, edge_split=split, seed_edges=pairs,
                   edge_type=edge_type, **negatives, exclude=exclude, batch_size=batch_size, fanouts=fanouts, seed=seed, epoch=epoch, shuffle=shuffle,
                   drop_last=drop_last, num_slots=num_slots, device=device, timeout_ms=timeout_ms,
                   weight_attr=weight_attr, edge_attrs=edge_attrs, time_attr=time_attr,
                   temporal_strategy=None if time_attr is None and temporal_strategy == "uniform"
                   else temporal_strategy, time_window=time_window, replace=replace, disjoint=disjoint,
                   edge_label_time=edge_label_time, labor=labor,
                   layer_dependency=layer_dependency, batch_dependency=batch_dependency, open_fields=open_fields,
                   producer=producer)
        self._typed = not self._loader._views.homogeneous
        self.edge_type = self._loader._views.link_type if self._typed else None  # the one gnnd took
        try:
            from torch_geometric.data import Data, HeteroData
            self._make = HeteroData if self._typed else Data
        except ImportError:
            self._make = HeteroBatch if self._typed else Batch

    def _inputs_at(self, index):
        """The edge_label_index (and edge_label_time) of a loader over the pairs at positions `index`."""
        edge_type, given = _edge_type(self._arguments["edge_label_index"])
        pairs = _known_inputs(given, "edge_label_index")[:, index]
        arguments = {"edge_label_index": pairs if edge_type is None else (edge_type, pairs), "edge_label": None}
        if self._arguments["edge_label_time"] is not None:
            arguments["edge_label_time"] = torch.as_tensor(self._arguments["edge_label_time"])[index]
        return arguments, index

    def _label(self, mapping):
        """PyG's edge_label of given pairs: the given labels of the batch's positives (input_id) then 0 for
        each binary negative; none where no labels are given and no negatives drawn. A split's are gnnd's."""
        if not self._given_pairs:
            return
        store = mapping[self.edge_type] if self._typed else mapping
        if "edge_label_index" not in store:  # triplets: PyG's have no edge_label
            return
        if self._edge_label is None:
            if not self._negatives:
                store.pop("edge_label", None)
            return
        positives = self._edge_label[store["input_id"].to(self._edge_label.device)]
        negatives = store["edge_label_index"].shape[1] - len(positives)
        store["edge_label"] = torch.cat([positives, positives.new_zeros((negatives, *positives.shape[1:]))])

    def _mappings(self):
        if self._typed:
            reader = _HeteroReader(self._loader._views)
            for batch in self._loader:
                yield self._as_pyg(hetero_link_mapping(reader, batch, self.edge_type))
        else:
            for batch in self._loader:
                yield self._as_pyg(link_to_pyg(batch))


def _edge_labels(edge_label, pairs, mode, device):
    """LinkNeighborLoader's edge_label, as PyG takes it: one label per given pair, on the batches' device;
    with binary negatives shifted by one where the least is 0 (0 then means a negative)."""
    if edge_label is None:
        return None
    if pairs is None:
        raise ValueError("edge_label: gnnd reads the labels of the edge split (leave it None, or give the pairs "
                         "as a (2, E) edge_label_index with their labels)")
    if mode == "triplet":  # PyG's words
        raise ValueError("'edge_label' needs to be undefined for 'triplet'-based negative sampling. Please use "
                         "`src_index`, `dst_pos_index` and `neg_pos_index` of the returned mini-batch instead to "
                         "differentiate between positive and negative samples.")
    labels = torch.as_tensor(edge_label)
    if labels.dim() == 0 or len(labels) != torch.as_tensor(pairs).shape[-1]:
        raise ValueError(f"edge_label: shape {tuple(labels.shape)}, expected one label per pair of "
                         f"edge_label_index ({torch.as_tensor(pairs).shape[-1]})")
    if mode == "binary" and labels.numel() and labels.min() == 0:
        labels = labels + 1
    return labels.to(device)


def _edge_type(edge_label_index):
    """(edge type or None, split name or (2, E) pairs) of LinkNeighborLoader's edge_label_index: a split name,
    a tensor, None ("train"), or for a typed graph (edge_type, one of those) or an edge type alone ("train")."""
    if isinstance(edge_label_index, tuple):
        if all(isinstance(part, str) for part in edge_label_index) and (
                len(edge_label_index) == 3 or (len(edge_label_index) == 2 and "___" not in edge_label_index[0]
                                               and edge_label_index[1] not in _SPLIT_NAMES)):
            return edge_label_index, "train"  # an edge type alone: (src, rel, dst) or (src, dst)
        if len(edge_label_index) != 2:
            raise ValueError("edge_label_index: (edge_type, split name or (2, E) tensor) or an edge type expected")
        edge_type, given = edge_label_index
        return edge_type, "train" if given is None else given
    return None, "train" if edge_label_index is None else edge_label_index


def _positive_of(subgraph, positives, sources):
    """PyG's batch of a disjoint link batch's nodes, the positive each one's subgraph belongs to (PyG's batch
    % num_pos), from gnnd's subgraph: an endpoint's entry in pair order, the destinations' after `sources`
    source entries where both are one type (else 0), negatives by round (negative j is positive j % P's)."""
    entry = subgraph - sources * (subgraph >= sources) if sources else subgraph
    return entry % positives


def hetero_link_mapping(reader, batch, edge_type):
    """HeteroData's attributes of a typed link batch: the typed batch's (_HeteroReader), then as PyG's typed
    LinkNeighborLoader: edge_label_index (int64, 2 x L), edge_label and input_id in the seed relation's store,
    or for triplets src_index in the source type's store and dst_pos_index, dst_neg_index in the destination
    type's; a disjoint batch's batch per node type as PyG's, a temporal one's edge_label_time in the seed
    relation's store (triplets: seed_time in both endpoint types' stores)."""
    out = reader.mapping(batch)
    arrays, key = batch.arrays, relation_key(edge_type) + "."
    store = out[edge_type]
    positives = len(arrays[key + "input_id"])
    store["input_id"] = arrays[key + "input_id"]
    triplet = key + "edge_label_index" not in arrays
    if not triplet:
        pairs = arrays[key + "edge_label_index"].t()  # gnnd's (L, 2) rows as PyG's (2, L)
        store["edge_label_index"] = pairs.to(torch.int64, memory_format=torch.contiguous_format)
        store["edge_label"] = arrays[key + "edge_label"]
    else:
        out[edge_type[0]]["src_index"] = arrays[key + "src_index"].to(torch.int64)
        out[edge_type[2]]["dst_pos_index"] = arrays[key + "dst_pos_index"].to(torch.int64)
        out[edge_type[2]]["dst_neg_index"] = _negative_index(arrays[key + "dst_neg_index"])
    if key + "edge_label_time" in arrays:
        times = arrays[key + "edge_label_time"]
        if triplet:  # each positive's time on both endpoint types' stores, as PyG's
            out[edge_type[0]]["seed_time"] = out[edge_type[2]]["seed_time"] = times
        else:
            store["edge_label_time"] = times
    sources = (positives if triplet else len(arrays[key + "edge_label_index"])) if edge_type[0] == edge_type[2] else 0
    for node_type in out:  # a disjoint batch's: every node type's
        if isinstance(node_type, str) and "batch" in out[node_type]:
            out[node_type]["batch"] = _positive_of(out[node_type]["batch"], positives, sources)
    return out


def _negative_index(dst_neg_index):
    """PyG's dst_neg_index: (P, amount) int64, or (P,) when the amount is 1."""
    out = dst_neg_index.to(torch.int64)
    return out[:, 0] if out.dim() == 2 and out.shape[1] == 1 else out


def link_to_pyg(batch):
    """The PyG attributes of a gnnd.Batch of a link session (torch output), as a dict."""
    out = to_pyg(batch)
    del out["y"], out["batch_size"]
    if out["x"] is None:  # no features and no node attribute x
        del out["x"]
    out["input_id"] = batch.input_id
    triplet = "edge_label_index" not in batch.__dict__
    if not triplet:
        pairs = batch.edge_label_index.t()  # gnnd's (L, 2) rows as PyG's (2, L), one copy
        out["edge_label_index"] = pairs.to(torch.int64, memory_format=torch.contiguous_format)
        out["edge_label"] = batch.edge_label
    else:
        out["src_index"] = batch.src_index.to(torch.int64)
        out["dst_pos_index"] = batch.dst_pos_index.to(torch.int64)
        out["dst_neg_index"] = _negative_index(batch.dst_neg_index)
    if "edge_label_time" in batch.__dict__:
        out["seed_time" if triplet else "edge_label_time"] = batch.edge_label_time
    if "batch" in out:  # sources first: the pairs' (triplets: the positives'), then the destinations
        positives = len(batch.input_id)
        sources = positives if triplet else len(batch.edge_label_index)
        out["batch"] = _positive_of(out["batch"], positives, sources)
    return out


def to_pyg(batch):
    """The PyG attributes of a gnnd.Batch (torch output), as a dict."""
    pair = getattr(batch, "_edge_pair", None)
    if pair is not None:  # one conversion kernel instead of an allocation and two copies
        edge_index = pair.to(torch.int64, memory_format=torch.contiguous_format)
    else:
        edge_index = torch.empty((2, batch.edge_src.numel()), dtype=torch.int64, device=batch.edge_src.device)
        edge_index[0].copy_(batch.edge_src)
        edge_index[1].copy_(batch.edge_dst)
    out = dict(x=getattr(batch, "features", None), edge_index=edge_index, y=getattr(batch, "labels", None),
               n_id=batch.node_ids, batch_size=batch.nodes_per_hop[0], num_sampled_nodes=list(batch.nodes_per_hop),
               num_sampled_edges=list(batch.edges_per_hop), input_id=batch.input_id)
    for name in batch._loader._views.edge_data[""]:  # e_id and edge attributes, row k edge k (as PyG slices them)
        out[name] = getattr(batch, name)
    for name in batch._loader._views.node_data[""]:  # node attributes, row i node n_id[i] (as PyG slices them)
        out[name] = getattr(batch, name)
    for name in ("batch", "seed_time"):  # a disjoint batch's
        if name in batch._loader._views.index:
            out[name] = getattr(batch, name)
    return out


class _HeteroReader:
    """Reads a session's typed batches into PyG's HeteroData attributes. The arrays and counts each attribute
    comes from are looked up by name once per session: a typed batch has dozens, and a trainer's step
    should not pay for building their names."""

    def __init__(self, views):
        index = views.index
        self.types = [(t, index[f"{t}.node_ids"], index.get(f"{t}.features"), views.total_count[t],
                       views.hop_counts[t], index.get(f"{t}.batch"),
                       [(name, index[f"{t}.{name}"]) for name in views.node_data[t + "."]]) for t in views.node_types]
        self.seed_time = index.get(f"{views.seed_type}.seed_time")  # a temporal batch's
        self.seed_type, self.labels = views.seed_type, index.get(f"{views.seed_type}.labels")
        keys = ["___".join(et) for et in views.edge_types]
        self.relations = [(et, index[f"{k}.edge_src"], index[f"{k}.edge_dst"], views.edge_total_count[k],
                           views.edge_hop_counts[k]) for et, k in zip(views.edge_types, keys)]
        # Per relation its edge data (e_id, edge attributes): (attribute name, array index) pairs.
        self.edge_data = [[(name, index[f"{k}.{name}"]) for name in views.edge_data[k + "."]] for k in keys]
        self.views = views  # the slots' arrays, viewed once

    def mapping(self, batch):
        """{node type: {n_id, num_nodes, x, num_sampled_nodes (, batch_size, y)}, edge type: {edge_index,
        num_sampled_edges (, e_id, edge attributes)}} of a gnnd.TypedBatch (torch output) in its slot."""
        arrays, counts = self.views.arrays[batch._slot], batch._values
        out = {}
        for t, ids, features, total, hops, subgraphs, data in self.types:
            n = counts[total]
            store = out[t] = {"n_id": arrays[ids][:n], "num_nodes": n,
                              "num_sampled_nodes": [counts[i] for i in hops]}
            if features is not None:
                store["x"] = arrays[features][:n]
            for name, i in data:  # node attributes (one named x where the type has no features)
                store[name] = arrays[i][:n]
            if subgraphs is not None:
                store["batch"] = arrays[subgraphs][:n]
        if self.seed_type is not None:  # a node batch (a link batch's hop 0 is its pairs' endpoints)
            seeds = out[self.seed_type]
            seeds["batch_size"] = batch.batch_size
            seeds["input_id"] = batch.input_id
            if self.labels is not None:
                seeds["y"] = arrays[self.labels][:batch.batch_size]
            if self.seed_time is not None:
                seeds["seed_time"] = arrays[self.seed_time][:batch.batch_size]
        pairs = [(arrays[src][:counts[total]], arrays[dst][:counts[total]]) for _, src, dst, total, _ in self.relations]
        for (et, _, _, total, hops), edge_index, data in zip(self.relations, edge_indices(pairs), self.edge_data):
            store = out[et] = {"edge_index": edge_index, "num_sampled_edges": [counts[i] for i in hops]}
            for name, i in data:
                store[name] = arrays[i][:counts[total]]
        return out


def edge_indices(pairs):
    """PyG's int64 (2, E) edge_index of every (edge_src, edge_dst) pair of int32 views, in one buffer. On a
    GPU one kernel converts them all (torch._foreach_copy_, torch 2.1 and later): a launch per relation
    costs a host-bound typed trainer more than the copy."""
    sizes = [len(src) for src, _ in pairs]
    if not pairs:
        return []
    some = pairs[0][0]
    buffer = torch.empty(2 * sum(sizes), dtype=torch.int64, device=some.device)
    edge_index = [piece.view(2, n) for piece, n in zip(buffer.split([2 * n for n in sizes]), sizes)]
    foreach_copy = getattr(torch, "_foreach_copy_", None)
    if foreach_copy is not None and some.is_cuda:
        rows = buffer.split([n for n in sizes for _ in range(2)])
        sources = [row for pair in pairs for row in pair]
        filled = [(r, s) for r, s in zip(rows, sources) if len(s)]
        if filled:
            foreach_copy([r for r, _ in filled], [s for _, s in filled])
    else:
        for out, (src, dst) in zip(edge_index, pairs):
            out[0].copy_(src)
            out[1].copy_(dst)
    return edge_index


def _pyg_data_classes():
    """PyG's data classes that a torch.save'd Data or HeteroData pickles (none without PyG)."""
    found = []
    for module, names in (("torch_geometric.data.data", ("Data", "DataEdgeAttr", "DataTensorAttr")),
                          ("torch_geometric.data.hetero_data", ("HeteroData",)),
                          ("torch_geometric.data.storage",
                           ("BaseStorage", "NodeStorage", "EdgeStorage", "GlobalStorage")),
                          ("torch_geometric.data.feature_store", ("TensorAttr",)),
                          ("torch_geometric.data.graph_store", ("EdgeAttr", "EdgeLayout"))):
        try:
            imported = __import__(module, fromlist=list(names))
        except ImportError:
            continue
        found += [getattr(imported, name) for name in names if hasattr(imported, name)]
    return found


def _load_saved(path, trust_pickle=False):
    """What torch.save wrote: a Data or HeteroData (needs PyG to unpickle), or their to_dict(). A pickle can
    run any code as it loads, so only tensors, containers and PyG's data classes are read (torch's
    weights_only) unless `trust_pickle`."""
    if trust_pickle:
        return torch.load(path, weights_only=False)
    serialization = torch.serialization  # torch before 2.4 allows no classes but its own (to_dict() loads)
    allowed = serialization.safe_globals(_pyg_data_classes()) if hasattr(serialization, "safe_globals") else (
        contextlib.nullcontext())
    try:
        with allowed:
            return torch.load(path, weights_only=True)
    except pickle.UnpicklingError as e:
        raise SaveError(f"{path}: holds more than tensors and PyG's data classes, and loading it would run its "
                        f"code ({str(e).splitlines()[0]}); if you trust the file, pass --trust-pickle") from None


def main(argv=None):
    """python3 -m gnnd.pyg save FILE.pt DIR [--feature-dtype D]: a torch.save'd Data or HeteroData (or its
    to_dict()) written as a gnnd dataset."""
    import argparse
    parser = argparse.ArgumentParser(prog="python3 -m gnnd.pyg", description=main.__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    saving = commands.add_parser("save", help="write a torch.save'd PyG Data or HeteroData as a gnnd dataset")
    saving.add_argument("file", help="a .pt file written by torch.save(data, FILE)")
    saving.add_argument("dir", help="the dataset directory to write (must not exist)")
    saving.add_argument("--feature-dtype", choices=["float32", "float16", "bfloat16", "float8_e4m3fn"],
                        help="store x in this dtype (default: x's own)")
    saving.add_argument("--no-hot-order", action="store_true", help="skip the GPU hot tier's ranking")
    saving.add_argument("--trust-pickle", action="store_true",
                        help="load FILE with torch.load(weights_only=False): it may run any code it holds; only "
                             "for files you trust (default: tensors, containers and PyG's data classes only)")
    args = parser.parse_args(argv)
    try:
        out = save(_load_saved(args.file, args.trust_pickle), args.dir, feature_dtype=args.feature_dtype,
                   hot_order=not args.no_hot_order)
    except SaveError as e:
        print(e, file=sys.stderr)
        return 1
    print(f"saved {out}: serve it with gnnd --dataset NAME={out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
