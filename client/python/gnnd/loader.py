"""gnnd's trainer-side loader: minibatches from a running gnnd, read in place from its slots."""
import collections.abc
import ctypes
import re

import numpy as np

from . import _dlpack, _native


def _as_dtype(tensor, gnnd_dtype):
    """Reinterprets a tensor of bits as its dtype where torch has it (float8_e4m3fn needs torch 2.1)."""
    import torch
    name = _native.DTYPE_NAMES[gnnd_dtype]
    if name == "float8_e4m3fn" and hasattr(torch, name):
        return tensor.view(getattr(torch, name))
    if name == "bool":  # exported as its bytes (uint8): older readers know no DLPack bool
        return tensor.view(torch.bool)
    return tensor


def _seed_array(seed_ids):
    """seed_ids as a contiguous int64 numpy array, and the mask's length if they came as a boolean mask (0
    otherwise); (None, 0) for None."""
    if seed_ids is None:
        return None, 0
    if hasattr(seed_ids, "detach"):  # a torch tensor, wherever it lives
        seed_ids = seed_ids.detach().cpu().numpy()
    seeds = np.asarray(seed_ids)
    if seeds.ndim != 1:
        raise ValueError(f"seed_ids: node ids or a boolean mask, one dimension, expected; got shape {seeds.shape}")
    mask_length = 0
    if seeds.dtype == np.bool_:  # gnnd checks it covers the seed type's nodes
        mask_length, seeds = len(seeds), np.flatnonzero(seeds)
    elif seeds.dtype.kind not in "iu" and seeds.size:
        raise ValueError(f"seed_ids: integer node ids or a boolean mask expected, got {seeds.dtype}")
    if seeds.size == 0:
        raise ValueError("seed_ids: empty" + (" (the mask selects no node)" if mask_length else ""))
    return np.ascontiguousarray(seeds.astype(np.int64, copy=False)), mask_length


def _int_times(what, times):
    """Integer times, one dimension (a tensor or array-like), as a numpy array."""
    if hasattr(times, "detach"):
        times = times.detach().cpu().numpy()
    times = np.asarray(times)
    if times.ndim != 1 or (times.dtype.kind not in "iu" and times.size):
        raise ValueError(f"{what}: integer times, one dimension, expected; got {times.dtype} of shape {times.shape}")
    if times.dtype.kind == "u" and times.size and int(times.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"{what}: {int(times.max())} is past int64 (times are int64: at most "
                         f"{np.iinfo(np.int64).max})")
    return times


def _weights_field(name, weights):
    """OpenSession's neg_src_weight or neg_dst_weight (one float32 a node) in protobuf text format."""
    values = np.asarray(weights.cpu() if hasattr(weights, "cpu") else weights, dtype=np.float32).reshape(-1)
    return f"{name}: [{', '.join(repr(float(v)) for v in values)}]"


def _quoted(what, text):
    """A string in protobuf text format: printable ASCII as itself, every other byte (and quotes, backslashes)
    escaped."""
    if not isinstance(text, str):
        raise ValueError(f"{what}: a str expected, got {text!r}")
    return '"' + "".join(chr(b) if 0x20 <= b < 0x7f and b not in (0x22, 0x5c) else f"\\{b:03o}"
                         for b in text.encode()) + '"'


def _integer(what, value):
    """An integer option as protobuf text (bools are not integers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{what}: an integer expected, got {value!r}")
    return str(int(value))


def _flag(value):
    return "true" if value else "false"


def _fanout_fields(fanouts):
    """OpenSession's fanouts (a list: every relation's) or relation_fanouts (a dict of one list per relation)."""
    if isinstance(fanouts, dict):
        rows = [list(row) for row in fanouts.values()]
        if not rows or any(len(row) != len(rows[0]) for row in rows):
            raise ValueError(f"fanouts: one list per relation, all of one length (one per hop); got {fanouts!r}")
        return [f"relation_fanouts {{ relation: {_quoted('fanouts', relation_key(edge_type))} fanouts: "
                f"[{', '.join(_integer('fanouts', f) for f in row)}] }}" for edge_type, row in zip(fanouts, rows)]
    fanouts = list(fanouts)
    return [f"fanouts: [{', '.join(_integer('fanouts', f) for f in fanouts)}]"] if fanouts else []


def _draw_field(weight_attr, time_attr, temporal_strategy, labor, layer_dependency, batch_dependency,
                time_window=None, replace=False):
    """OpenSession.draw in protobuf text format: the one draw policy its arguments name (none: uniform)."""
    if not isinstance(batch_dependency, int) or isinstance(batch_dependency, bool) or batch_dependency < 0:
        raise ValueError(f"batch_dependency: {batch_dependency!r} (a number of batches, 0 or more)")
    if not labor and (layer_dependency or batch_dependency):
        raise ValueError("layer_dependency and batch_dependency are LABOR sampling's: set labor=True")
    if time_attr is None and (temporal_strategy is not None or time_window is not None):
        raise ValueError(f"{'time_window' if time_window is not None else 'temporal_strategy'} is temporal "
                         "sampling's: set time_attr")
    if time_window is not None and (isinstance(time_window, bool) or not isinstance(time_window, (int, np.integer))
                                    or time_window < 0):
        raise ValueError(f"time_window: {time_window!r} (0 or more, in the times' unit)")
    named = [name for name, given in (("weight_attr", weight_attr is not None), ("time_attr", time_attr is not None),
                                      ("labor", bool(labor))) if given]
    if len(named) > 1:
        raise ValueError(f"{' and '.join(named)}: two draw policies (a loader draws by one)")
    for name, attr in (("weight_attr", weight_attr), ("time_attr", time_attr)):
        if attr is not None and (not isinstance(attr, str) or not attr.isidentifier()):
            raise ValueError(f"{name}: {attr!r} is not " + ("\"node_time\" or " if name == "time_attr" else "")
                             + "an edge attribute's name")
    if replace and (time_attr is not None or labor):
        raise ValueError(f"replace=True with {'time_attr' if time_attr is not None else 'labor'}: drawing with "
                         "replacement is the uniform and weighted rules'")
    if weight_attr is not None:
        return [f'draw {{ weighted {{ attr: "{weight_attr}"{" replace: true" if replace else ""} }} }}']
    if time_attr is not None:
        if temporal_strategy not in (None, "uniform", "last"):
            raise ValueError(f"temporal_strategy: {temporal_strategy!r} (uniform or last)")
        strategy = f' strategy: "{temporal_strategy}"' if temporal_strategy else ""
        window = f" time_window: {int(time_window)}" if time_window is not None else ""
        return [f'draw {{ temporal {{ attr: "{time_attr}"{strategy}{window} }} }}']
    if labor:
        return [f"draw {{ labor {{ layer_dependency: {_flag(layer_dependency)} batch_dependency: "
                f"{batch_dependency} }} }}"]
    return ["draw { uniform { replace: true } }"] if replace else []


def _time_fields(disjoint, seed_times, seeds, mask_length, edge_label_time=None, pairs=None):
    """OpenSession's disjoint, seed_times and edge_label_time in protobuf text format."""
    fields = []
    if disjoint:
        fields.append("disjoint: true")
    if seed_times is not None:
        if seeds is None:
            raise ValueError("seed_times: one time per seed id; give seed_ids (a split's times come with it: "
                             "SPLIT_time.npy)")
        times = _int_times("seed_times", seed_times)
        if mask_length and len(times) == mask_length:  # times of every node: the masked ones'
            times = times[np.asarray(seeds)]
        if len(times) != len(seeds):
            raise ValueError(f"seed_times: {len(times)} times for {len(seeds)} seed ids (one per seed)")
        fields.append("seed_times: [" + ",".join(map(str, times.astype(np.int64).tolist())) + "]")
    if edge_label_time is not None:
        if pairs is None:
            raise ValueError("edge_label_time: one time per seed pair; give seed_edges (an edge split's times "
                             "come with it: SPLIT_edge_time.npy)")
        times = _int_times("edge_label_time", edge_label_time)
        if 2 * len(times) != len(pairs):
            raise ValueError(f"edge_label_time: {len(times)} times for {len(pairs) // 2} seed pairs (one per pair)")
        fields.append("edge_label_time: [" + ",".join(map(str, times.astype(np.int64).tolist())) + "]")
    return fields


def _pair_array(seed_edges):
    """seed_edges, (2, E) node ids (PyG's edge_label_index), as one contiguous int64 array of the E sources
    then the E destinations (None stays None)."""
    if seed_edges is None:
        return None
    if hasattr(seed_edges, "detach"):  # a torch tensor, wherever it lives
        seed_edges = seed_edges.detach().cpu().numpy()
    pairs = np.asarray(seed_edges)
    if pairs.ndim != 2 or pairs.shape[0] != 2 or pairs.shape[1] == 0:
        raise ValueError(f"seed_edges: (2, E) node ids with E >= 1 expected, got shape {pairs.shape}")
    if pairs.dtype.kind not in "iu":
        raise ValueError(f"seed_edges: integer node ids expected, got {pairs.dtype}")
    return np.ascontiguousarray(pairs.astype(np.int64, copy=False).reshape(-1))


def _make_view(session, slot, index, dtype, output):
    """A tensor or numpy array over array `index` of `slot` at its capacity, no copy. It holds the slot
    mapping (a C deleter lets go of it), so it stays readable after the loader closes."""
    if output == "torch":
        import torch.utils.dlpack
        return _as_dtype(torch.utils.dlpack.from_dlpack(_dlpack.capsule(session, slot, index)), dtype)
    array = np.from_dlpack(_dlpack.Exporter(_dlpack.capsule(session, slot, index, as_bits=True)))
    return array.view(np.bool_) if _native.DTYPE_NAMES[dtype] == "bool" else array


class _SlotViews:
    """Every slot's arrays, viewed once at the slot's capacity (when the loader opens, or when a batch first
    comes in a slot gnnd added), by the session's batch schema (names, dtypes, the count that sizes each).
    gnnd keeps a slot's arrays at their addresses for the session, so a batch is a prefix of each view:
    slicing costs about a µs, wrapping memory tens of µs per array in Python, too much for a trainer's
    next()."""

    def __init__(self, lib, session, output):
        self._lib, self._session, self._output = lib, session, output
        self.arrays, self._edges, self._pairs = [], [], {}
        info = _native.ArrayInfo()
        self.names, self.count_of = [], []  # per array: its name, the index of the count giving its rows
        self.index = {}  # name -> position
        for index in range(lib.gnnd_session_arrays(session)):
            _native.check(lib.gnnd_session_array_info(session, index, ctypes.byref(info)))
            self.index[info.name.decode()] = len(self.names)
            self.names.append(info.name.decode())
            self.count_of.append(info.count)
        self.count_names = [lib.gnnd_session_count_name(session, i).decode()
                            for i in range(lib.gnnd_session_counts(session))]
        # A typed dataset's arrays are named TYPE.* and SRC___REL___DST.*; a homogeneous one's are not.
        self.homogeneous = "node_ids" in self.names
        if self.homogeneous:
            # The per-hop counts (host memory, whatever the device): nodes_hop0..L and edges_hop0..L-1.
            hops = sum(1 for name in self.count_names if name.startswith("edges_hop"))
            first_node_hop, first_edge_hop = self.count_names.index("nodes_hop0"), self.count_names.index("edges_hop0")
            self.node_hop_counts = slice(first_node_hop, first_node_hop + hops + 1)
            self.edge_hop_counts = slice(first_edge_hop, first_edge_hop + hops)
        else:
            suffixed = lambda suffix: [n[:-len(suffix)] for n in self.names if n.endswith(suffix)]  # noqa: E731
            self.node_types = suffixed(".node_ids")
            self.edge_types = [tuple(key.split("___")) for key in suffixed(".edge_src")]
            # A node batch's seed type; a link batch (typed, "input_id" among its arrays) has none.
            self.seed_type = next((n[:-len(".seeds")] for n in self.count_names if n.endswith(".seeds")), None)
            # Positions of the counts a batch is read by, found by name once: per node type (by name) and
            # relation (by key) its total and its per-hop counts.
            count = {name: i for i, name in enumerate(self.count_names)}
            hops = next(h for h in range(len(self.count_names)) if f"{self.node_types[0]}.nodes_hop{h + 1}" not in count)
            keys = ["___".join(et) for et in self.edge_types]
            self.total_count = {t: count[f"{t}.nodes"] for t in self.node_types}
            self.hop_counts = {t: [count[f"{t}.nodes_hop{h}"] for h in range(hops + 1)] for t in self.node_types}
            self.edge_total_count = {k: count[f"{k}.edges"] for k in keys}
            self.edge_hop_counts = {k: [count[f"{k}.edges_hop{h}"] for h in range(hops)] for k in keys}
            self.seeds_count = count[f"{self.seed_type}.seeds"] if self.seed_type else count["positives"]
            # A link batch's seed relation: its pair arrays are named after it ("SRC___REL___DST.input_id").
            self.link_type = next((tuple(n[:-len(".input_id")].split("___")) for n in self.names
                                   if n.endswith(".input_id")), None)
        # Each relation's edge data (its e_id and edge attributes: the arrays counted by its edges, but for
        # edge_src and edge_dst), by name without the relation's prefix ("" or "SRC___REL___DST.").
        edge_counts = {"": self.count_names.index("edges")} if self.homogeneous else \
            {k + ".": i for k, i in self.edge_total_count.items()}
        self.edge_data = self._counted_by(edge_counts, ("edge_src", "edge_dst"))
        # Each type's node data (its node attributes: the arrays counted by its nodes, but for node_ids, features
        # and batch), by name without the type's prefix ("" or "TYPE.").
        node_counts = {"": self.count_names.index("nodes")} if self.homogeneous else \
            {t + ".": i for t, i in self.total_count.items()}
        self.node_data = self._counted_by(node_counts, ("node_ids", "features", "batch"))
        for slot in range(lib.gnnd_session_slots(session)):
            self._view(slot)

    def _counted_by(self, counts, excluded):
        """{prefix: the names, without it, of the arrays named PREFIX... and counted by counts[prefix]} but
        `excluded`."""
        out = {prefix: [] for prefix in counts}
        for name, count in zip(self.names, self.count_of):
            for prefix, by in counts.items():
                if count == by and name.startswith(prefix) and name[len(prefix):] not in excluded:
                    out[prefix].append(name[len(prefix):])
        return out

    def _view(self, slot):
        lib, session = self._lib, self._session
        arrays = [_native.Array() for _ in self.names]
        for index, array in enumerate(arrays):
            _native.check(lib.gnnd_slot_array(session, slot, index, ctypes.byref(array)))
        self.arrays.append(tuple(_make_view(session, slot, index, array.dtype, self._output)
                                 for index, array in enumerate(arrays)))
        prefixes = [""] if self.homogeneous else ["___".join(et) + "." for et in self.edge_types]
        self._edges.append({prefix: tuple((self.names.index(prefix + name), arrays[self.names.index(prefix + name)])
                                          for name in ("edge_src", "edge_dst"))
                            for prefix in prefixes})

    def of(self, slot):
        """The arrays of `slot`, viewed now if gnnd added it since."""
        while len(self.arrays) <= slot:
            self._view(len(self.arrays))
        return self.arrays[slot]

    def edge_pair(self, slot, length, prefix=""):
        """The slot's edge_src and edge_dst (of relation "SRC___REL___DST." for a typed batch) as one
        (2, length) torch view (rows at their own addresses), so a PyG edge_index is one conversion; None
        unless both are int32 with edge_dst after edge_src."""
        pair = self._pairs.get((slot, prefix), False)
        if pair is False:
            self.of(slot)
            (src_index, src), (_, dst) = self._edges[slot][prefix]
            delta, pair = dst.data - src.data, None
            if src.dtype == _native.INT32 and dst.dtype == _native.INT32 and delta > 0 and delta % 4 == 0:
                import torch.utils.dlpack
                pair = torch.utils.dlpack.from_dlpack(_dlpack.capsule(
                    self._session, slot, src_index, shape=(2, src.shape[0]), strides=(delta // 4, 1)))
            self._pairs[(slot, prefix)] = pair
        return None if pair is None else pair[:, :length]

    def clear(self):
        """Lets go of the views (batches still held keep their slots readable)."""
        self.arrays, self._edges, self._pairs = [], [], {}


class _SlotBatch:
    """What every batch does with the slot it is read from."""

    def release(self):
        """Hands the slot back to gnnd (idempotent). The arrays must not be used afterwards unless copied."""
        if self._slot is not None:
            self._loader._release(self._slot)
            self._slot = None

    def _give_up_slot(self):
        """The slot, for the loader to release with its next fetch (-1 if already released)."""
        slot, self._slot = self._slot, None
        return -1 if slot is None else slot


class Batch(_SlotBatch):
    """One minibatch in the canonical layout, as attributes: node_ids, num_nodes_per_hop, edge_src, edge_dst,
    num_edges_per_hop, features, labels (torch tensors or numpy arrays), plus epoch, step, and the per-hop
    counts as Python lists in host memory whatever the device: nodes_per_hop (hops + 1), edges_per_hop (hops).

    Unless the loader copies, the arrays alias gnnd's slot and are valid until the batch is released:
    explicitly with release(), or by fetching the next batch."""

    def __init__(self, loader, values, copy):
        """values: the gnnd_batch_values of the batch just taken."""
        views = loader._views
        counts = values.counts[:values.num_counts]
        slot = values.slot
        self.epoch, self.step = values.epoch, values.step
        self.nodes_per_hop = counts[views.node_hop_counts]
        self.edges_per_hop = counts[views.edge_hop_counts]
        self._loader, self._slot = loader, slot
        # gnnd.pyg: both edge arrays as one view (valid while the slot is held); edge_src and edge_dst are then
        # its rows, made only if asked for (__getattr__)
        pair = loader._edge_pairs and not copy
        for name, view, count in zip(views.names, views.of(slot), views.count_of):
            if pair and name in ("edge_src", "edge_dst"):
                continue
            setattr(self, name, view[:counts[count]])
        self._edge_pair = views.edge_pair(slot, counts[views.count_of[views.names.index("edge_src")]]) \
            if pair else None
        if pair and self._edge_pair is None:
            for name in ("edge_src", "edge_dst"):
                index = views.names.index(name)
                setattr(self, name, views.of(slot)[index][:counts[views.count_of[index]]])
        if copy:
            for name in views.names:
                value = getattr(self, name)
                setattr(self, name, value.clone() if loader.output == "torch" else value.copy())
            if "input_id" not in views.index:  # a node batch's, read before the slot goes back
                value = loader._input_id(slot)
                self.input_id = value.clone() if loader.output == "torch" else value.copy()
            self.release()

    def __getattr__(self, name):  # only for an attribute not set: input_id, or edge_src or edge_dst of a pair view
        if name == "input_id" and "_slot" in self.__dict__:  # a node batch's, fetched when first asked for
            if self._slot is None:
                raise AttributeError("input_id: the batch was released before it was read (copy=True keeps it)")
            value = self._loader._input_id(self._slot)
            setattr(self, name, value)
            return value
        pair = self.__dict__.get("_edge_pair")
        if pair is None or name not in ("edge_src", "edge_dst"):
            raise AttributeError(f"'Batch' object has no attribute {name!r}")
        value = pair[0 if name == "edge_src" else 1]
        setattr(self, name, value)
        return value

    def __getitem__(self, name):
        return getattr(self, name)

    def __repr__(self):
        seeds = f"seeds={len(self.labels)}" if "labels" in self.__dict__ else f"seed_edges={len(self.input_id)}"
        return (f"Batch(epoch={self.epoch}, step={self.step}, nodes={len(self.node_ids)}, "
                f"edges={len(self.edge_src)}, {seeds})")


def _edge_attrs_field(names):
    """OpenSession.edge_attrs in protobuf text format."""
    if isinstance(names, str):
        names = [names]
    for name in names:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"edge_attrs: {name!r} is not an attribute name")
    return "edge_attrs { " + " ".join(f'names: "{name}"' for name in names) + " }"


def relation_key(edge_type):
    """A relation's key as gnnd names it: "src___rel___dst" for a (src, rel, dst) tuple; a string as given."""
    return edge_type if isinstance(edge_type, str) else "___".join(edge_type)


class _BatchArrays(collections.abc.Mapping):
    """A typed batch's arrays by name, each sliced to its count when first asked for (a batch has dozens; a
    trainer reads a few)."""

    def __init__(self, views, slot_arrays, counts):
        self._index, self._slot_arrays, self._counts, self._count_of = views.index, slot_arrays, counts, views.count_of
        self._sliced = {}

    def __getitem__(self, name):
        value = self._sliced.get(name)
        if value is None:
            i = self._index[name]  # KeyError for a name the batch does not have
            value = self._sliced[name] = self._slot_arrays[i][:self._counts[self._count_of[i]]]
        return value

    def __iter__(self):
        return iter(self._index)

    def __len__(self):
        return len(self._index)


class TypedBatch(_SlotBatch):
    """One minibatch of a typed dataset. Its arrays by the names of gnnd's batch schema, as batch[name] or in
    the dict batch.arrays: per node type T "T.node_ids" (ids within T: the seeds first, then by hop),
    "T.num_nodes_per_hop", "T.features" (types with features), "T.labels" (the seeds', when their type has
    labels); per relation "SRC___REL___DST.edge_src" and ".edge_dst" (int32 local indices into the source and
    destination types' node_ids, message direction src -> dst, by hop) and ".num_edges_per_hop".

    batch.counts maps every count's name to its value (host ints), e.g. "T.nodes", "T.nodes_hop1",
    "SRC___REL___DST.edges"; node_types, edge_types ((src, rel, dst) tuples), seed_type and batch_size (the
    seeds) describe the batch (a link batch: seed_type None, link_type its seed relation R, batch_size its
    positives, and the pair arrays "R.input_id", "R.edge_label_index", "R.edge_label" or "R.src_index",
    "R.dst_pos_index", "R.dst_neg_index", as a homogeneous link batch's, in local indices of R's source and
    destination types); num_nodes(T), num_edges(edge_type), nodes_per_hop(T) and
    edges_per_hop(edge_type) give the totals and per-hop lists. Valid until released, as Batch."""

    def __init__(self, loader, values, copy):
        views = self._views = loader._views
        self._values = counts = values.counts[:values.num_counts]
        self.epoch, self.step = values.epoch, values.step
        self._loader, self._slot = loader, values.slot
        self._counts = None
        self.arrays = _BatchArrays(views, views.of(values.slot), counts)
        self.node_types, self.edge_types, self.seed_type = views.node_types, views.edge_types, views.seed_type
        self.link_type = views.link_type
        self.batch_size = counts[views.seeds_count]  # a link batch's positives
        self._input_id = None
        if copy:
            self.arrays = {name: value.clone() if loader.output == "torch" else value.copy()
                           for name, value in self.arrays.items()}
            if self.seed_type is not None:  # a node batch's input_id, read before the slot goes back
                value = loader._input_id(values.slot)
                self._input_id = value.clone() if loader.output == "torch" else value.copy()
            self.release()

    @property
    def input_id(self):
        """Each seed's position in its split or seed ids (PyG's input_id); a link batch's positives' positions
        in their edge split."""
        if self.link_type is not None:
            return self.arrays[relation_key(self.link_type) + ".input_id"]
        if self._input_id is None:
            if self._slot is None:
                raise RuntimeError("input_id: the batch was released before it was read (copy=True keeps it)")
            self._input_id = self._loader._input_id(self._slot)
        return self._input_id

    @property
    def counts(self):
        if self._counts is None:  # made when first asked for: the readers of a batch use positions
            self._counts = dict(zip(self._views.count_names, self._values))
        return self._counts

    def edge_pair(self, edge_type):
        """Relation `edge_type`'s edge_src and edge_dst as one (2, E) int32 torch view of the slot (None for
        numpy output or a copied batch)."""
        if self._loader.output != "torch" or self._slot is None:
            return None
        key = relation_key(edge_type)
        return self._views.edge_pair(self._slot, self.num_edges(key), key + ".")

    def num_nodes(self, node_type):
        return self._values[self._views.total_count[node_type]]

    def num_edges(self, edge_type):
        return self._values[self._views.edge_total_count[relation_key(edge_type)]]

    def nodes_per_hop(self, node_type):
        values = self._values
        return [values[i] for i in self._views.hop_counts[node_type]]

    def edges_per_hop(self, edge_type):
        values = self._values
        return [values[i] for i in self._views.edge_hop_counts[relation_key(edge_type)]]

    def __getitem__(self, name):
        return self.arrays[name]

    def __repr__(self):
        nodes = ", ".join(f"{t}={self.num_nodes(t)}" for t in self.node_types)
        return f"TypedBatch(epoch={self.epoch}, step={self.step}, seeds={self.batch_size}, nodes: {nodes})"


class Loader:
    """Iterates minibatches served by gnnd; each `for` over it is one epoch (epoch, epoch + 1, ...).

        for batch in gnnd.Loader(dataset="products", batch_size=1024, fanouts=[15, 10, 5], seed=0,
                                 rank=r, world_size=w):
            ...

    address: gnnd's address (default: $GNND_ADDRESS, else unix:/tmp/gnnd.sock). split: "train" (default),
    "valid" or "test"; or seed_ids: the node ids to iterate instead (any int sequence, numpy array or tensor,
    one dimension; duplicates kept, up to 8 M ids), or a boolean mask over the seed type's nodes (one entry
    per node, else refused).

    output: "torch", "numpy", or "auto" (torch when importable). copy=True gives owned arrays (and releases
    the slot at once); otherwise a batch is valid until the next one is fetched or it is released.
    Errors raise gnnd.GnndError with the gRPC status name in .code (UNAVAILABLE when gnnd is not there).

    Link prediction (homogeneous graphs on the CPU or a GPU, typed ones on the CPU): edge_split ("train", "valid", "test") makes the seeds that
    split's edges, or seed_edges (2, E) node ids (PyG's edge_label_index) the given pairs, batch_size of them
    per batch; neg_sampling "binary" or "triplet" with neg_amount per
    positive (binary: a fraction too, ceil(P x neg_amount) negatives a batch of P positives, negative k paired with
    positive k % P, as PyG's; strict_negatives: never an edge; neg_src_weight / neg_dst_weight: one weight per node
    of the endpoint type, PyG's src_weight / dst_weight, endpoints drawn in proportion, with replacement), exclude "self" or "reverse" keeps the seed edges out of
    message passing. Batches then carry input_id, edge_label_index (pairs x 2 rows: source, destination) and
    edge_label, or src_index, dst_pos_index, dst_neg_index; gnnd.pyg.LinkNeighborLoader makes PyG's shapes.
    A typed dataset's link session names the seed edges' relation in edge_type ((src, rel, dst) or its key;
    None: the one relation with the edge split); hop 0 holds the endpoints of its source and destination types.

    Typed datasets: node_type names the seeds' type (default: the one type with splits; split and seed_ids
    are then that type's), and fanouts is one list for every relation or a dict with one list per relation
    ({("author", "writes", "paper"): [15, 10], ...} or by "author___writes___paper"; every relation, lists
    of one length, 0 to sample none through a relation). Batches are then gnnd.TypedBatch.

    Edge data: where the dataset stores edge ids (datasets with edge attributes do), every batch carries
    each sampled edge's original id, e_id (its row in the imported edge list; a typed batch's "R.e_id"),
    and each edge attribute's rows under its name ("edge_attr", "R.edge_attr"), row k belonging to edge k.
    edge_attrs: the attribute names to carry (None: all; []: none).
    weight_attr: an edge attribute (one float32 an edge, none negative; PyG's weight_attr) whose values weight
    the draws: each hop draws min(fanout, in-edges of positive weight) without replacement, successively in
    proportion to weight; weight 0 is never drawn (typed: every relation sampled through must have it).

    Time (on the CPU or a GPU): time_attr "node_time" (the dataset's node times) or the name of
    an int64 edge attribute (each edge's time) samples temporally, as PyG's time_attr: for a seed of time t
    only in-edges no newer than t are candidates, each hop draws min(fanout, candidates) of a node's by
    temporal_strategy ("uniform": without replacement; "last": the most recent, ties by larger edge id).
    time_window=W (0 or more, in the times' unit): only in-edges (node times: neighbors) of time from t - W to t
    are candidates, the rest as above (PyG's pytorch_geometric#10593; cuGraph-PyG's fixed window).
    replace=True (PyG's; the uniform and weighted rules): each node with an in-neighbor draws exactly fanout of
    them with replacement (weighted: each draw in proportion to weight), so an edge may come several times.
    A seed's time: seed_times (one per seed id, PyG's input_time), else its split's times (SPLIT_time.npy),
    else its own node time. Temporal batches are disjoint, and disjoint=True asks for that without time:
    each seed its own subgraph, deduplicated on its own; batches then carry "batch" (each node's seed
    position; typed "T.batch") and, temporal, "seed_time" ("T.seed_time" of the seed type). Link sessions:
    a pair's time is edge_label_time (one per seed_edges pair, PyG's) or its edge split's (SPLIT_edge_time.npy);
    each endpoint is its own subgraph, in pair order (sources, then destinations where both are one type; else
    source i and destination i share subgraph i), every negative taking its positive's time, and batches carry
    "edge_label_time" (each pair's; triplets each positive's). With node times, negatives are drawn among the
    nodes no newer than their pair (uniformly; the earliest node where none is, as PyG).

    LABOR (labor=True; CPU and CUDA sessions alike): LABOR-0 layer-neighbor sampling (GraphBolt's
    LayerNeighborSampler) instead of the uniform rule: each source node of a hop draws one random number r
    shared by every destination, and a destination of d in-edges keeps the in-edge from it iff r < fanout / d
    (all where d <= fanout): fanout in expectation, and overlapping neighborhoods keep the same sources, so a
    batch holds fewer nodes. Batches carry edge_weight (typed "R.edge_weight"): each sampled edge's d / fanout,
    1 / its inclusion probability. layer_dependency=True: the same r at every hop; batch_dependency=K: r moves
    smoothly over K consecutive batches (more nodes shared between them: better cache hit rates). A batch whose
    hop keeps more edges than its slot holds is drawn again; one that does in 64 draws fails the session, naming
    the relation (a batch without those edges would be biased).

    induced=True (PyG's subgraph_type="induced"): the hops choose each batch's nodes, and its edges are every
    edge between them rather than those drawn — per relation, each node's in-edges from the batch's nodes, in
    node order and then the dataset's order, with e_id and edge attributes. They are not by hop: hop 0's
    edge count holds them all. A slot holds every in-edge of its nodes at most (never more than the graph's
    edges), so slots are larger. Not with time_attr, disjoint, labor or exclude.

    open_fields: more of the open request, as OpenSession fields in protobuf text format (proto/gnnd/v1/
    service.proto), each replacing what the arguments above set for it: options of a newer gnnd before this
    package names them. A field the client library does not know is refused naming it.

    device="cuda:N": gnnd samples on that GPU into slots in its memory (CUDA IPC); batches are CUDA tensors
    ordered on torch's current stream (no host synchronization), and releasing one records that stream's
    progress, so gnnd refills the slot only after the work queued on it. producer (a CUDA session's; None: gnnd's
    setting, "auto" unless configured): "sm" makes batches with GPU kernels (SMs the trainer could use);
    "host_gather" samples with them and gathers the rows on gnnd's CPU threads, uploaded by the copy engines (no SM
    reads a row over PCIe); "host" makes the whole batch on gnnd's CPU threads (no SM time); "auto" tries host_gather
    and sm in turn and keeps the one the trainer takes batches from faster (gnnctl stats says which and why). The
    same batches.
    """

    def __init__(self, address=None, dataset=None, split=None, batch_size=1024, fanouts=(15, 10, 5), seed=0,
                 epoch=0, rank=0, world_size=1, shuffle=True, drop_last=False, num_slots=0, device="cpu",
                 output="auto", copy=False, timeout_ms=5000, seed_ids=None, node_type=None, edge_split=None,
                 neg_sampling=None, neg_amount=1, strict_negatives=False, exclude=None, seed_edges=None,
                 edge_type=None, weight_attr=None, edge_attrs=None, time_attr=None, temporal_strategy=None,
                 time_window=None, replace=False,
                 disjoint=False, seed_times=None, edge_label_time=None, labor=False, layer_dependency=False,
                 batch_dependency=0, induced=False, neg_src_weight=None, neg_dst_weight=None, open_fields=None,
                 producer=None):
        self._client, self._session = ctypes.c_void_p(), ctypes.c_void_p()  # before anything can raise
        self._mask_ids = None
        if dataset is None:
            raise ValueError("dataset: required (the name gnnd serves it under)")
        if output == "auto":
            try:
                import torch  # noqa: F401
                output = "torch"
            except ImportError:
                output = "numpy"
        if output not in ("torch", "numpy"):
            raise ValueError(f"output = {output!r} (torch, numpy or auto)")
        if device.startswith("cuda") and output != "torch":
            raise ValueError(f"device = {device!r} gives CUDA tensors: output must be torch")
        self.device = device
        self.induced = bool(induced)  # batches' edges are every edge between their nodes, not by hop
        self._cuda_index = None
        self.output, self.copy, self.epoch = output, copy, epoch
        self._held = None
        self._views = None
        self._current_stream = None  # torch's current cudaStream_t of a device index, for a CUDA device
        self._edge_pairs = False  # gnnd.pyg sets it: batches carry edge_src and edge_dst as one view
        self._started = False  # the session's first epoch is already running
        self._exhausted = False  # the current epoch has ended
        self._iterating = False  # an iteration of the current epoch began and did not reach its end
        self._native = _native.bound()
        lib = self._native.lib
        _native.check(lib.gnnd_connect(address.encode() if address else None, timeout_ms, ctypes.byref(self._client)))
        # The whole request as OpenSession fields in protobuf text format (proto/gnnd/v1/service.proto, C API 1.13's
        # options.request), the same way for every option; only the seed ids and pairs, arrays of up to millions,
        # go beside it by pointer.
        fields = [f"dataset: {_quoted('dataset', dataset)}", f"batch_size: {_integer('batch_size', batch_size)}",
                  f"seed: {_integer('seed', seed)}", f"epoch: {_integer('epoch', epoch)}",
                  f"rank: {_integer('rank', rank)}", f"world_size: {_integer('world_size', world_size)}",
                  f"no_shuffle: {_flag(not shuffle)}", f"drop_last: {_flag(drop_last)}",
                  f"num_slots: {_integer('num_slots', num_slots)}", f"device: {_quoted('device', device)}",
                  "slots_may_grow: true"]  # slots sized by the batches; _SlotViews views added ones as batches name them
        fields += _fanout_fields(fanouts)
        seeds, mask_length = _seed_array(seed_ids)
        if seeds is not None and split is not None:
            raise ValueError("split and seed_ids: give one of them")
        options = _native.SessionOptions()
        if seeds is not None:
            options.seed_ids = seeds.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
            options.num_seed_ids = len(seeds)
            fields.append(f"seed_mask_length: {mask_length}")
        # With a boolean mask, input_id is each seed's node id (PyG's: its index in the mask), not its position
        # among the masked nodes.
        self._mask_ids = seeds if mask_length else None
        if node_type is not None:
            fields.append(f"node_type: {_quoted('node_type', node_type)}")
        self._pairs = _pair_array(seed_edges)  # kept until the session is open
        if edge_split is not None or self._pairs is not None:
            if split is not None or seeds is not None:
                raise ValueError("edge_split or seed_edges, and split or seed_ids: give one of them")
            if edge_split is not None and self._pairs is not None:
                raise ValueError("edge_split and seed_edges: give one of them")
            if edge_type is not None:
                fields.append(f"edge_type: {_quoted('edge_type', relation_key(edge_type))}")
            if edge_split is not None:
                fields.append(f"edge_split: {_quoted('edge_split', edge_split)}")
            else:
                options.seed_edges = self._pairs.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
                options.num_seed_edges = len(self._pairs) // 2
        link = edge_split is not None or self._pairs is not None
        if split is None:  # gnnd's default split where no seeds are given
            split = "" if seeds is not None or link else "train"
        fields.append(f"split: {_quoted('split', split)}")
        if edge_attrs is not None:
            fields.append(_edge_attrs_field(edge_attrs))
        # Sent whatever the session: gnnd refuses them without an edge split.
        fields.append(f"neg_sampling: {_quoted('neg_sampling', neg_sampling or 'none')}")
        if neg_amount != int(neg_amount):  # a fraction of each batch's positives (binary)
            fields.append(f"neg_ratio: {float(neg_amount)!r}")
            neg_amount = 0
        fields.append(f"neg_amount: {_integer('neg_amount', int(neg_amount))}")
        for name, weights in (("neg_src_weight", neg_src_weight), ("neg_dst_weight", neg_dst_weight)):
            if weights is not None:
                fields.append(_weights_field(name, weights))
        fields.append(f"strict_negatives: {_flag(strict_negatives)}")
        fields.append(f"exclude: {_quoted('exclude', exclude or 'none')}")
        fields += _draw_field(weight_attr, time_attr, temporal_strategy, labor, layer_dependency, batch_dependency,
                              time_window, replace)
        fields += _time_fields(disjoint, seed_times, seeds, mask_length, edge_label_time, self._pairs)
        if induced:
            fields.append("induced: true")
        if producer is not None:
            fields.append(f"producer: {_quoted('producer', producer)}")
        if open_fields is not None:
            if not isinstance(open_fields, str) or "\0" in open_fields:
                raise ValueError("open_fields: OpenSession fields in protobuf text format, a str without NUL")
            if re.search(r"(^|[\s{;,])batch_size\s*:", open_fields):
                raise ValueError("open_fields: batch_size is the loader's own argument (it sizes the batches' "
                                 "views): pass batch_size=")
            # Read after the request: its fields replace the loader's, named with their defaults too.
            self._open_fields = open_fields.encode()  # kept until the session is open
            options.open_fields = self._open_fields
        self._request = "\n".join(fields).encode()
        options.request = self._request
        try:
            _native.check(lib.gnnd_open_session(self._client, ctypes.byref(options), ctypes.byref(self._session)))
            self._views = _SlotViews(lib, self._session, output)
            self._batch_type = Batch if self._views.homogeneous else TypedBatch
            # Node batches' input_id: written per slot into a buffer of the batch size, viewed once.
            self._input_id_buffers = [np.empty(batch_size, np.int64) for _ in range(lib.gnnd_session_slots(self._session))]
            self._input_id_views = self._input_id_buffers
            if output == "torch":
                import torch
                self._input_id_views = [torch.from_numpy(b) for b in self._input_id_buffers]
        except Exception:
            self.close()
            raise
        self._started = True
        self._wanted_epoch = None

    def set_epoch(self, epoch):
        """Makes the next iteration run epoch `epoch` (its own shuffle order), as DistributedSampler.set_epoch
        does; without it each iteration runs the epoch after the previous one, whole or broken off (a new order
        each time, as PyG's loaders). Asking for an epoch other than the one already running (the session
        starts `epoch` at once) finishes that one first."""
        self._wanted_epoch = int(epoch)

    def __len__(self):
        """Batches per epoch for this rank."""
        if not self._session:
            raise RuntimeError("the loader is closed")
        return int(self._native.lib.gnnd_session_steps(self._session))

    def __iter__(self):
        if not self._session:
            raise RuntimeError("the loader is closed")
        if self._wanted_epoch is not None:
            wanted = self._wanted_epoch
        elif self._iterating:  # the last iteration was broken off: the next epoch, as after a whole one (PyG's
            wanted = self.epoch + 1  # loaders shuffle anew on every iter)
        else:
            wanted = self.epoch
        self._wanted_epoch = None
        if not self._started or wanted != self.epoch:
            self._drain()
            self.epoch = wanted
            _native.check(self._native.lib.gnnd_start_epoch(self._session, self.epoch))
        self._started, self._exhausted, self._iterating = False, False, True
        values = _native.BatchValues()  # one gnnd_next_batch_values per batch: releases the last, takes the next
        next_batch, session, values_ref = self._native.lib.gnnd_next_batch_values, self._session, ctypes.byref(values)
        while True:
            release = self._held._give_up_slot() if self._held is not None else -1
            self._held = None
            status = next_batch(session, release, self._stream(), values_ref)
            if status != _native.GNND_OK and _native.check(status) == _native.GNND_END_OF_EPOCH:
                break
            batch = self._batch_type(self, values, self.copy)
            if not self.copy:
                self._held = batch
            yield batch
        self._exhausted, self._iterating = True, False
        self.epoch += 1

    def _input_id(self, slot):
        """A node batch's seeds' positions in their split (PyG's input_id): a view of this loader's buffer for
        `slot`, valid as the batch's arrays are."""
        while len(self._input_id_buffers) <= slot:  # a slot gnnd added
            self._input_id_buffers.append(np.empty(len(self._input_id_buffers[0]), np.int64))
            if self._input_id_views is not self._input_id_buffers:
                import torch
                self._input_id_views.append(torch.from_numpy(self._input_id_buffers[-1]))
        buffer = self._input_id_buffers[slot]
        n = self._native.lib.gnnd_batch_input_id(self._session, slot, buffer.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
                                                 len(buffer))
        if n < 0:  # a slot with no batch, or a buffer too small: the library said which
            raise _native.GnndError("OUT_OF_RANGE", self._native.lib.gnnd_last_error().decode())
        if self._mask_ids is not None:
            buffer[:n] = self._mask_ids[buffer[:n]]
        return self._input_id_views[slot][:n]

    def _drain(self):
        """Finishes an epoch that was left early, so the next one can start."""
        if self._held is not None:
            self._held.release()
            self._held = None
        release, values = -1, _native.BatchValues()
        while not self._exhausted:
            if _native.check(self._native.lib.gnnd_next_batch_values(self._session, release, self._stream(),
                                                                     ctypes.byref(values))) \
                    == _native.GNND_END_OF_EPOCH:
                self._exhausted = True
                self.epoch += 1
            release = values.slot

    def _stream(self):
        """The cudaStream_t batches are ordered on: torch's current stream for this loader's GPU."""
        if not self.device.startswith("cuda"):
            return None
        if self._current_stream is None:  # once: no torch.device, and no torch.cuda.Stream, per call
            import torch
            index = torch.device(self.device).index
            self._cuda_index = torch.cuda.current_device() if index is None else index
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # the handle alone
            self._current_stream = raw or (lambda i: torch.cuda.current_stream(i).cuda_stream)
        return self._current_stream(self._cuda_index)

    def _release(self, slot):
        if self._session:
            _native.check(self._native.lib.gnnd_release_batch_on_stream(self._session, slot, self._stream()))

    def close(self):
        """Ends the session (gnnd frees its slots) and the connection."""
        self._held = None  # the loader's own hold on the last batch; one the caller kept stays readable
        if getattr(self, "_views", None) is not None:
            self._views.clear()  # the slots are unmapped once no batch views them either
        if self._session:
            self._native.lib.gnnd_close_session(self._session)
            self._session = ctypes.c_void_p()
        if self._client:
            self._native.lib.gnnd_client_free(self._client)
            self._client = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
