"""pytest plugin: PyG's own loader tests, unchanged, run against gnnd's loaders (-p gnnd_pyg_adapter).

torch_geometric.loader.NeighborLoader and LinkNeighborLoader become functions that serve the test's data from
gnnd and return gnnd.pyg's loaders; every translation they make is listed in README.md beside this file. The
tests' own checks are untouched. GNND, GNNCTL, GNND_CLIENT_LIBRARY: as for tests/python; GNND_DEVICE: where
gnnd samples ("cpu", the default, or "cuda:N")."""
import atexit
import inspect
import itertools
import os
import pathlib
import re
import shutil
import sys
import tempfile

import pytest
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
import gnnd.pyg  # noqa: E402
import torch_geometric.loader  # noqa: E402
from daemon_util import Daemon  # noqa: E402

DEVICE = os.environ.get("GNND_DEVICE", "cpu")
PYG_NEIGHBOR_LOADER = torch_geometric.loader.NeighborLoader
PYG_LINK_LOADER = torch_geometric.loader.LinkNeighborLoader
# PyG's skips for want of its own samplers (gnnd is the sampler here): lifted, unless the test calls those
# packages' operators itself (torch.ops.pyg / torch.ops.torch_sparse), which gnnd does not replace.
SAMPLER_SKIPS = re.compile(r"No neighbor sampler installed|Package(s)? .*(pyg_lib|torch_sparse)|pyg-lib")
SAMPLER_FLAGS = ("WITH_PYG_LIB", "WITH_TORCH_SPARSE", "WITH_WEIGHTED_NEIGHBOR_SAMPLE",
                 "WITH_EDGE_TIME_NEIGHBOR_SAMPLE")


class _Server:
    """One gnnd for the run; each data object a test gives a loader is saved and loaded once."""

    def __init__(self):
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="gnnd-pyg-tests-"))
        self.daemon = None
        self.served = {}  # id(data) -> (data, its arrays' identity, dataset name)
        self.names = itertools.count()

    def address(self):
        if self.daemon is None:
            self.daemon = Daemon(self.root, f"--dataset-roots={self.root}", name="pygtests")
            atexit.register(self.stop)
        return self.daemon.address

    def dataset(self, data):
        identity = _identity(data)
        known = self.served.get(id(data))
        if known is not None and known[1] == identity:
            return known[2]
        name = f"d{next(self.names)}"
        gnnd.pyg.save(data, self.root / name)
        self.address()
        self.daemon.gnnctl("load", name, self.root / name)
        self.served[id(data)] = (data, identity, name)
        return name

    def stop(self):
        if self.daemon is not None:
            self.daemon.stop()
        shutil.rmtree(self.root, ignore_errors=True)


SERVER = _Server()
USED = set()  # the tests that made a gnnd loader (a test that made none checked nothing of gnnd's)


def _identity(data):
    """What a data object holds now (its stores' tensors): a test may change data between two loaders."""
    mapping = data.to_dict() if hasattr(data, "to_dict") else vars(data)
    out = []
    for key, value in mapping.items():
        values = value.items() if isinstance(value, dict) else [(None, value)]
        out += [(str(key), k, getattr(v, "data_ptr", lambda: id(v))(), tuple(getattr(v, "shape", ())))
                for k, v in values]
    return tuple(sorted(out, key=str))


def _device_of(data):
    for store in (data.stores if hasattr(data, "stores") else [data]):
        for value in store.values():
            if isinstance(value, torch.Tensor):
                return value.device
    return torch.device("cpu")


def _arguments(pyg_loader, data, args, kwargs):
    """PyG's loader arguments as named ones (PyG's positional order), the DataLoader ones merged."""
    bound = inspect.signature(pyg_loader.__init__).bind(None, data, *args, **kwargs).arguments
    bound.pop("self")
    bound.pop("data")
    extra = bound.pop("kwargs", {})
    return {**bound, **extra}


def _served(data, arguments):
    """gnnd's arguments for a test's data: its dataset, gnnd's address and device, batches on the data's
    device (where PyG's would be) before the test's transform."""
    if isinstance(data, tuple):
        pytest.skip("PyG's FeatureStore/GraphStore inputs: gnnd serves datasets it holds")
    USED.add(os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0])
    device, transform = _device_of(data), arguments.pop("transform", None)
    if torch.device(DEVICE) != device or transform is not None:
        arguments["transform"] = lambda batch: (transform or (lambda b: b))(batch.to(device))
    return dict(arguments, dataset=SERVER.dataset(data), address=SERVER.address(), device=DEVICE)


def NeighborLoader(data, *args, **kwargs):  # noqa: N802 (PyG's name)
    arguments = _arguments(PYG_NEIGHBOR_LOADER, data, args, kwargs)
    if arguments.get("input_nodes") is None and not hasattr(data, "node_types"):
        arguments["input_nodes"] = "all"  # PyG's None: every node (gnnd's: the train split)
    return gnnd.pyg.NeighborLoader(None, **_served(data, arguments))


def LinkNeighborLoader(data, *args, **kwargs):  # noqa: N802 (PyG's name)
    arguments = _arguments(PYG_LINK_LOADER, data, args, kwargs)
    given = arguments.get("edge_label_index")
    if isinstance(data, tuple):
        return gnnd.pyg.LinkNeighborLoader(None, **_served(data, arguments))  # skipped there, saying why
    if given is None and not hasattr(data, "node_types"):
        arguments["edge_label_index"] = data.edge_index  # PyG's None: every edge (gnnd's: the train split)
    elif isinstance(given, tuple) and all(isinstance(part, str) for part in given):
        arguments["edge_label_index"] = (given, data[given].edge_index)  # an edge type alone: its edges
    elif isinstance(given, tuple) and given[1] is None:
        arguments["edge_label_index"] = (given[0], data[given[0]].edge_index)
    return gnnd.pyg.LinkNeighborLoader(None, **_served(data, arguments))


torch_geometric.loader.NeighborLoader = NeighborLoader
torch_geometric.loader.LinkNeighborLoader = LinkNeighborLoader


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module
        for flag in SAMPLER_FLAGS:  # the tests' own branches on PyG's samplers: taken as with them
            if hasattr(module, flag):
                setattr(module, flag, True)
        if "torch.ops." in inspect.getsource(item.function):
            continue
        item.own_markers[:] = [m for m in item.own_markers if not (
            m.name == "skipif" and SAMPLER_SKIPS.search(str(m.kwargs.get("reason", ""))))]


def pytest_report_teststatus(report, config):
    """A passed test that made no gnnd loader is reported apart: it returned before reaching a loader."""
    if report.when == "call" and report.passed and report.nodeid not in USED:
        return "vacuous", "v", "PASSED (no gnnd loader)"
    return None


def pytest_terminal_summary(terminalreporter):
    vacuous = terminalreporter.stats.get("vacuous", [])
    if vacuous:
        terminalreporter.write_line(f"{len(vacuous)} passed without making a gnnd loader:")
        for report in vacuous:
            terminalreporter.write_line(f"  {report.nodeid}")
