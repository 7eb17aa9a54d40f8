"""gnnd.pyg.save: a PyG Data or HeteroData written as a gnnd dataset.

The graph's arrays are staged as .npy files beside DIR and imported by `gnnctl import` (edgelist for a Data,
the typed .npy layout for a HeteroData), so a saved dataset is built, validated and renamed into place by the
same code as every import: an error names what is wrong, and a failed save leaves nothing behind."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np

# gnnd's feature dtypes, as torch names them; numpy has no bfloat16 or float8: those are staged as float32
# (exactly: both widen without rounding) and stored back in their own dtype by the import.
FEATURE_DTYPES = ("float32", "float16", "bfloat16", "float8_e4m3fn")
# PyG's split attributes (a boolean mask over the nodes, or node ids) and the split each one is.
SPLIT_ATTRIBUTES = (("train_mask", "train"), ("val_mask", "valid"), ("test_mask", "test"))
# Node attributes saved as the dataset's node times (integers, one per node): sessions select them with
# time_attr="node_time" or by the attribute's own name.
NODE_TIME_ATTRIBUTES = ("node_time", "time")
# What PyG's loaders set on every batch: a node attribute of such a name would be hidden by it.
BATCH_ATTRIBUTES = ("e_id", "batch", "batch_size", "input_id", "seed_time", "num_sampled_nodes",
                    "num_sampled_edges", "edge_index")
# A RandomLinkSplit's seed edges, which PyG's LinkNeighborLoader takes as arguments (its batches set their own).
LINK_SEED_ATTRIBUTES = ("edge_label_index", "edge_label", "edge_label_time")
# A node store's attributes with a role of their own (features, labels, splits, times; n_id checked: gnnd's
# batches carry n_id themselves). Masks and times are carried into batches too (_node_attributes).
NODE_ATTRIBUTES = ("x", "y", "num_nodes", "n_id", *NODE_TIME_ATTRIBUTES, *(a for a, _ in SPLIT_ATTRIBUTES))


class SaveError(ValueError):
    """What is wrong with the data given to gnnd.pyg.save, or what the import refused."""


def _check_name(name, what):
    """A node type or relation name as gnnd's schema takes it (letters, digits and _, 1 to 64, no ___): it names
    directories while the data is staged, so "../x" or "/abs" could write outside them."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_]{1,64}", name) or "___" in name:
        raise SaveError(f"{what} {name!r}: names are letters, digits and _ (1 to 64, no ___)")


def gnnctl_path():
    """gnnctl: $GNNCTL, the build tree or prefix this package was made with, beside the client library's
    prefix (a bundle's or cmake --install's bin/), then PATH."""
    if os.environ.get("GNNCTL"):
        return os.environ["GNNCTL"]
    here = pathlib.Path(__file__).resolve().parent
    candidates = []
    try:
        from . import _build
        candidates.append(pathlib.Path(_build.GNNCTL))
    except ImportError:  # a source checkout: its build tree
        candidates.append(here.parents[2] / "build" / "tools" / "gnnctl")
    candidates += [pathlib.Path(prefix) / "bin" / "gnnctl" for prefix in (sys.prefix, "/usr/local", "/usr")]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("gnnctl")
    if found:
        return found
    raise SaveError("gnnctl not found (gnnd.pyg.save runs its import): set GNNCTL to its path or put it on PATH. "
                    "Tried: " + ", ".join(str(c) for c in candidates) + ", PATH")


def _numpy(value, what):
    """(numpy array, torch dtype name) of a tensor or array; bfloat16 and float8 widened to float32."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        name = str(value.dtype).removeprefix("torch.")
        if name in ("bfloat16", "float8_e4m3fn"):
            return value.float().numpy(), name
        return value.contiguous().numpy(), name
    array = np.asarray(value)
    if array.dtype == object:
        raise SaveError(f"{what}: not a tensor or array ({type(value).__name__})")
    return array, array.dtype.name


def _stores(data):
    """(node stores {type: {attribute: value}}, edge stores {(src, rel, dst): {...}}, typed) of a Data, a
    HeteroData, or their to_dict() forms. A Data is one node type and one relation, named None."""
    mapping = data if isinstance(data, dict) else None
    if mapping is None and callable(getattr(data, "to_dict", None)):
        mapping = data.to_dict()
    if mapping is None:
        if hasattr(data, "node_types") and hasattr(data, "edge_types"):
            mapping = {key: dict(data[key].items()) if hasattr(data[key], "items") else vars(data[key])
                       for key in [*data.node_types, *data.edge_types]}
        else:
            mapping = {k: v for k, v in vars(data).items() if not k.startswith("_")}
    # Typed: edge types, a HeteroData, or stores per node type (a HeteroData of nodes alone's to_dict()).
    typed = any(isinstance(k, tuple) or isinstance(v, dict) for k, v in mapping.items()) or (
        hasattr(data, "node_types") and hasattr(data, "edge_types"))
    if not typed:
        if mapping.get("edge_index") is None:
            if _node_count(mapping) is None:
                raise SaveError("data has no edge_index (a PyG Data's (2, E) tensor of source and target ids) and "
                                "no num_nodes, x or y to count its nodes by")
            mapping = dict(mapping, edge_index=np.zeros((2, 0), np.int64))  # a graph of nodes alone
        return {None: mapping}, {None: {"edge_index": mapping["edge_index"]}}, False
    nodes = {k: dict(v) for k, v in mapping.items() if isinstance(k, str) and isinstance(v, dict)}
    edges = {k: dict(v) for k, v in mapping.items() if isinstance(k, tuple)}
    for key in edges:
        if len(key) != 3 or not all(isinstance(part, str) for part in key):
            raise SaveError(f"edge type {key!r}: expected (source type, relation, destination type)")
        for part in key:
            _check_name(part, f"edge type {key!r}: the name")
        if "edge_index" not in edges[key]:
            raise SaveError(f"edge type {key!r} has no edge_index")
        for t in (key[0], key[2]):
            nodes.setdefault(t, {})
    if not edges:  # nodes alone: an empty relation (src, "to", dst) between every two types names link seeds
        counted = [t for t, store in nodes.items() if _node_count(store) is not None]  # not HeteroData's global store
        if not counted:
            raise SaveError("data has no node types and no edge types (a HeteroData's data[type] with num_nodes, x "
                            "or y, and data[(src, rel, dst)].edge_index)")
        edges = {(s, "to", d): {"edge_index": np.zeros((2, 0), np.int64)} for s in counted for d in counted}
    for t in nodes:
        _check_name(t, "node type")
    return nodes, edges, True


def _node_count(store):
    """The node count the store says (num_nodes, else the rows of x, y or a mask), or None (then gnnctl takes
    the largest id in the edges plus one)."""
    if store.get("num_nodes") is not None:
        return int(store["num_nodes"])
    for key in ("x", "y"):
        if store.get(key) is not None:
            return int(np.shape(store[key])[0])
    for attribute, _ in SPLIT_ATTRIBUTES:
        if store.get(attribute) is not None and _is_mask(store[attribute]):
            return int(np.shape(store[attribute])[0])
    return None


def _is_mask(value):
    return str(getattr(value, "dtype", "")).removeprefix("torch.") == "bool"


def _features(store, what, path, feature_dtype):
    """Stages x as float32 or float16 .npy; returns its torch dtype name (None without x)."""
    if store.get("x") is None or (feature_dtype is None and _x_is_attribute(store["x"])):
        return None
    x, dtype = _numpy(store["x"], f"{what}.x")
    if x.ndim != 2:
        raise SaveError(f"{what}.x: shape {tuple(x.shape)}, expected (num_nodes, dim)")
    if dtype not in FEATURE_DTYPES:
        if feature_dtype is None:
            raise SaveError(f"{what}.x: {dtype} (gnnd stores {', '.join(FEATURE_DTYPES)} features: pass "
                            "feature_dtype='float32' to convert)")
        x = x.astype(np.float32)
    np.save(path, x)
    return dtype


def _labels(store, what, path):
    """Stages y, one class id per node (-1 or NaN: none), as .npy; False without y."""
    if store.get("y") is None:
        return False
    y, _ = _numpy(store["y"], f"{what}.y")
    if y.ndim == 2 and y.shape[1] == 1:  # OGB's (N, 1)
        y = y[:, 0]
    if y.ndim != 1:
        raise SaveError(f"{what}.y: shape {tuple(y.shape)}, expected one class id per node (N,) "
                        "(gnnd serves single-label node classification)")
    np.save(path, y.astype(np.int64) if y.dtype.kind in "iub" else y)
    return True


def _splits(store, what, split_idx, out_dir):
    """Stages each split (PyG's train_mask / val_mask / test_mask, a mask or ids, or OGB's split_idx) as
    ids; returns whether any was given. A mask covers every node of the store (_node_count)."""
    given = False
    count = _node_count(store)
    for attribute, split in SPLIT_ATTRIBUTES:
        value = split_idx.get(split) if split_idx is not None else None
        if value is None:
            value = store.get(attribute)
        if value is None:
            continue
        array, dtype = _numpy(value, f"{what}.{attribute}")
        if array.ndim != 1:
            raise SaveError(f"{what}.{attribute}: shape {tuple(array.shape)}, expected a mask or ids (one dimension)")
        if dtype == "bool" and count is not None and len(array) != count:
            raise SaveError(f"{what}.{attribute}: a mask of {len(array)} entries over {count} nodes "
                            "(one entry per node)")
        ids = np.flatnonzero(array) if dtype == "bool" else array
        if ids.dtype.kind not in "iu":
            raise SaveError(f"{what}.{attribute}: {dtype} (a boolean mask or integer node ids)")
        os.makedirs(out_dir, exist_ok=True)
        np.save(os.path.join(out_dir, f"{split}.npy"), ids.astype(np.int64))
        given = True
    for _, split in SPLIT_ATTRIBUTES:  # the import takes all three where any is given
        if given and not os.path.exists(os.path.join(out_dir, f"{split}.npy")):
            np.save(os.path.join(out_dir, f"{split}.npy"), np.zeros(0, np.int64))
    return given


def _edges(store, what, path):
    edge_index, _ = _numpy(store["edge_index"], f"{what}.edge_index")
    if edge_index.ndim != 2 or edge_index.shape[0] != 2 or edge_index.dtype.kind not in "iu":
        raise SaveError(f"{what}.edge_index: {edge_index.dtype} {tuple(edge_index.shape)}, expected integer (2, E)")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, edge_index.astype(np.int64))


def _edge_data(store, what, directory):
    """Stages every edge attribute of an edge store (each of its values but edge_index, one row per edge:
    edge_attr, edge_weight, edge times, the user's own) as DIRECTORY/NAME.npy; returns their names. e_id
    is checked, not stored: gnnd's batches carry each edge's input row as e_id, which PyG's e_id of a graph
    saved whole is."""
    edges = int(np.shape(store["edge_index"])[1])
    names = []
    for name, value in store.items():
        if name == "edge_index" or value is None:
            continue
        if name in LINK_SEED_ATTRIBUTES:  # PyG's link loaders take them as arguments, never from the data
            warnings.warn(f"gnnd.pyg.save: {what}.{name} not stored: link seeds are not edge data (give them to "
                          "LinkNeighborLoader(edge_label_index=..., edge_label=...) or import them as an edge "
                          "split: gnnctl import --edge-splits)", stacklevel=4)
            continue
        array, dtype = _numpy(value, f"{what}.{name}")
        if array.ndim == 0 or array.shape[0] != edges:
            raise SaveError(f"{what}.{name}: shape {tuple(array.shape)}, not one row per edge ({edges}): gnnd stores "
                            "an edge store's attributes per edge")
        if name == "e_id":
            if not np.array_equal(array, np.arange(edges)):
                raise SaveError(f"{what}.e_id: not 0 .. E-1 (gnnd's batches carry each edge's row in edge_index as "
                                "e_id): store your own edge ids under another name")
            continue
        if dtype in ("bfloat16", "float8_e4m3fn"):
            raise SaveError(f"{what}.{name}: {dtype} (edge attributes are float32, float16 or integers)")
        os.makedirs(directory, exist_ok=True)
        np.save(os.path.join(directory, name + ".npy"), array)
        names.append(name)
    return names


def _node_times(store, what, path):
    """Stages the node store's times (node_time or time, integers, one per node) as .npy; returns the name
    they had (None without)."""
    given = [name for name in NODE_TIME_ATTRIBUTES if store.get(name) is not None]
    if not given:
        return None
    if len(given) > 1:
        raise SaveError(f"{what}: both {' and '.join(given)} (node times: give one)")
    times, dtype = _numpy(store[given[0]], f"{what}.{given[0]}")
    if times.ndim != 1 or times.dtype.kind not in "iu":
        raise SaveError(f"{what}.{given[0]}: {dtype} {tuple(times.shape)}, expected integer node times (N,)")
    np.save(path, times)
    return given[0]


def _node_time_name(names, what):
    """--node-time-name: the name the node times had where it is not node_time (one name for every type)."""
    names = set(names)
    if len(names) > 1:
        raise SaveError(f"{what}: node times named {' and '.join(sorted(names))} by type (gnnd names them once)")
    name = names.pop() if names else "node_time"
    return [] if name == "node_time" else ["--node-time-name", name]


def _node_attributes(store, what, directory, feature_dtype, flag_prefix=""):
    """Stages the node store's attributes that batches carry by node (any name but x as features, y, n_id and
    num_nodes: node times and boolean split masks too, as PyG's batches have them; one row per node) as
    DIRECTORY/NAME.npy; returns their --node-attr flags. Refuses PyG's batch attribute names (a batch sets its
    own) and an n_id other than 0 .. N-1."""
    if store.get("n_id") is not None:
        n_id, _ = _numpy(store["n_id"], f"{what}.n_id")
        if not np.array_equal(n_id, np.arange(len(n_id))):
            raise SaveError(f"{what}.n_id: not 0 .. N-1 (gnnd's batches carry each node's id as n_id)")
    count = _node_count(store)
    flags = []
    for name, value in store.items():
        mask = name in dict(SPLIT_ATTRIBUTES) and _is_mask(value) and np.shape(value)[0] == count  # ids: a split's
        carried = (name in NODE_TIME_ATTRIBUTES or mask
                   or (name == "x" and feature_dtype is None and _x_is_attribute(value)))
        if value is None or (name in NODE_ATTRIBUTES and not carried):
            continue
        if name in BATCH_ATTRIBUTES:
            raise SaveError(f"{what}.{name}: PyG's batches set their own {name}: store it under another name")
        _check_name(name, f"{what}: the attribute")
        array, dtype = _numpy(value, f"{what}.{name}")
        if array.ndim not in (1, 2) or (count is not None and array.shape[0] != count):
            raise SaveError(f"{what}.{name}: shape {tuple(array.shape)}, not one row per node "
                            f"({count if count is not None else 'num_nodes'}) of one value or a vector: gnnd stores "
                            "a node store's attributes per node")
        if dtype in ("bfloat16", "float8_e4m3fn"):
            raise SaveError(f"{what}.{name}: {dtype} (node attributes are float32, float16 or integers)")
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, name + ".npy")
        np.save(path, array)
        flags += ["--node-attr", f"{flag_prefix}{name}={path}"]
    return flags


def _x_is_attribute(x):
    """Whether x is not features (integers or booleans, e.g. PyG's x = torch.arange(N)): it is then stored as a
    node attribute named x, as it is."""
    dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    return str(dtype).removeprefix("torch.") not in (*FEATURE_DTYPES, "float64", "float")


def _feature_dtype_flag(dtypes, feature_dtype):
    """--feature-dtype: the one dtype every type's x is stored in (given, or all x's own)."""
    if feature_dtype is not None:
        if feature_dtype not in FEATURE_DTYPES:
            raise SaveError(f"feature_dtype={feature_dtype!r} (one of {', '.join(FEATURE_DTYPES)})")
        return ["--feature-dtype", feature_dtype]
    kinds = {d for d in dtypes.values() if d is not None}
    if len(kinds) > 1:
        raise SaveError("x dtypes differ by node type (" + ", ".join(f"{t}: {d}" for t, d in dtypes.items() if d)
                        + "): gnnd stores one; pass feature_dtype=")
    return ["--feature-dtype", kinds.pop()] if kinds else []


def save(data, path, *, feature_dtype=None, split_idx=None, hot_order=True):
    """Writes `data` (a torch_geometric Data or HeteroData, or their to_dict()) as the gnnd dataset `path`:
    edge_index per edge type -> CSC over the destinations (src -> dst, as PyG's message flow), x per node type
    (its dtype kept: float32, float16, bfloat16, float8_e4m3fn; feature_dtype converts), y (one class id per
    node, -1: none), and splits from train_mask / val_mask / test_mask (masks or ids) or OGB's split_idx
    ({"train": ids, "valid": ..., "test": ...}; typed: {"train": {"paper": ids}, ...}); node times (node_time
    or time: integers, one per node; sessions select them with time_attr="node_time" or their own name); every
    other node attribute (any name, one row per node: an integer or boolean x, masks, node times, the user's
    own; batches carry them by name, the rows of n_id, as PyG's); every edge store's attributes (edge_attr,
    edge_weight, edge times, the user's own: one row per edge; batches carry them by name) and each edge's row
    as e_id. Attributes keep float32, float16 and bool; other floats become float32, other integers int64. A
    HeteroData of nodes alone gets an empty relation (src, "to", dst) between every two node types (link seeds
    name one).
    Anything else is refused, naming it, rather than dropped. Returns the path. Serve it with `gnnd --dataset
    NAME=PATH` or `gnnctl load NAME PATH`."""
    if os.path.lexists(path):  # a symbolic link too, dangling or not: the save never writes through one
        raise SaveError(f"{path}: exists (gnnd.pyg.save writes a new dataset directory)")
    out = pathlib.Path(path).resolve()
    if out.exists():
        raise SaveError(f"{out}: exists (gnnd.pyg.save writes a new dataset directory)")
    nodes, edges, typed = _stores(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.save-", dir=out.parent) as staging:
        if typed:
            command = _stage_typed(nodes, edges, staging, feature_dtype, split_idx)
        else:
            command = _stage_homogeneous(nodes[None], staging, feature_dtype, split_idx)
        command = [gnnctl_path(), "import", *command, str(out), f"--hot-order={str(hot_order).lower()}"]
        try:
            proc = subprocess.run(command, capture_output=True, text=True)
        except OSError as e:
            raise SaveError(f"cannot run {command[0]} (gnnctl; set GNNCTL to its path): {e.strerror}") from None
        if proc.returncode != 0:  # gnnctl's error lines, not its progress
            errors = [line.removeprefix("gnnctl: ") for line in proc.stderr.splitlines() if line.startswith("gnnctl:")]
            said = "; ".join(errors) if errors else proc.stderr.strip()
            raise SaveError(f"gnnd.pyg.save {out}: {said.replace(staging + '/', '')}")
    return out


def _stage_homogeneous(store, staging, feature_dtype, split_idx):
    command = ["--format", "edgelist", os.path.join(staging, "edge_index.npy"), "--edge-ids"]
    _edges(store, "data", command[2])
    edges = int(np.shape(store["edge_index"])[1])
    nodes = _node_count(store)
    edge_store = {"edge_index": store["edge_index"]}
    for name, value in list(store.items()):  # PyG's is_edge_attr: "edge" in the name, or a row per edge alone
        rows = np.shape(value)[0] if np.ndim(value) > 0 else None
        if name != "edge_index" and value is not None and (
                "edge" in name or (rows == edges and rows != nodes and name not in NODE_ATTRIBUTES)):
            edge_store[name] = value
    node_store = {k: v for k, v in store.items() if k not in edge_store}
    command += _node_attributes(node_store, "data", os.path.join(staging, ".node_attrs"), feature_dtype)
    directory = os.path.join(staging, "edge_attrs")
    for name in _edge_data(edge_store, "data", directory):
        command += ["--edge-attr", f"{name}={os.path.join(directory, name + '.npy')}"]
    name = _node_times(store, "data", os.path.join(staging, "node_time.npy"))
    if name is not None:
        command += ["--node-time", os.path.join(staging, "node_time.npy"), *_node_time_name([name], "data")]
    dtype = _features(store, "data", os.path.join(staging, "x.npy"), feature_dtype)
    if dtype is not None:
        command += ["--features", os.path.join(staging, "x.npy")]
    command += _feature_dtype_flag({None: dtype}, feature_dtype)
    if _labels(store, "data", os.path.join(staging, "y.npy")):
        command += ["--labels", os.path.join(staging, "y.npy")]
    if _splits(store, "data", split_idx, os.path.join(staging, "splits")):
        command += ["--splits", os.path.join(staging, "splits")]
    count = _node_count(store)
    if count is not None:
        command += ["--num-nodes", str(count)]
    return command


def _stage_typed(nodes, edges, staging, feature_dtype, split_idx):
    """The typed .npy layout gnnctl imports as `mag240m`: T/node_feat.npy, T/node_label.npy, T/SPLIT.npy,
    SRC___REL___DST/edge_index.npy."""
    for key, store in edges.items():
        what, directory = f"data[{key!r}]", os.path.join(staging, "___".join(key))
        _edges(store, what, os.path.join(directory, "edge_index.npy"))
        _edge_data(store, what, directory)
    dtypes, counts, times, time_names, attribute_flags = {}, [], [], [], []
    for t, store in nodes.items():
        what = f"data[{t!r}]"
        attribute_flags += _node_attributes(store, what, os.path.join(staging, ".node_attrs", t), feature_dtype,
                                            f"{t}.")
        directory = os.path.join(staging, t)
        os.makedirs(directory, exist_ok=True)
        name = _node_times(store, what, os.path.join(staging, f"{t}.node_time.npy"))
        if name is not None:
            times += ["--node-time", f"{t}={os.path.join(staging, f'{t}.node_time.npy')}"]
            time_names.append(name)
        dtypes[t] = _features(store, what, os.path.join(directory, "node_feat.npy"), feature_dtype)
        labeled = _labels(store, what, os.path.join(directory, "node_label.npy"))
        per_type = None
        if split_idx is not None:
            per_type = {split: ids[t] for split, ids in split_idx.items() if isinstance(ids, dict) and t in ids}
        _splits(store, what, per_type, directory)
        count = _node_count(store)
        in_relation = any(t in (key[0], key[2]) for key in edges)
        if count is not None and (in_relation or dtypes[t] is not None or labeled):  # a type gnnctl will see
            counts.append(f"{t}={count}")
    command = ["--format", "mag240m", staging, "--edge-ids", *_feature_dtype_flag(dtypes, feature_dtype), *times,
               *_node_time_name(time_names, "data"), *attribute_flags]
    if counts:
        command += ["--num-nodes", ",".join(counts)]
    return command
