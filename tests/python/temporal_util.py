"""What the temporal tests build and check batches against: a homogeneous dataset with times, and its CSC."""
import numpy as np

from daemon_util import run_gnnctl


def timed_edge_list(folder, out, nodes, edges, seed=3):
    """Imports into `out` an edge list of random edges with random node times, an int64 edge attribute "time" and a
    float32 one "w", 4 features, 3 classes, and splits (train 0-299, valid 300-349, test 350-399) with random seed
    times; its inputs are written to `folder`."""
    rng = np.random.default_rng(seed)
    np.save(folder / "edges.npy", np.stack([rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)]))
    inputs = {"time": rng.integers(0, 1000, edges), "w": rng.random(edges).astype(np.float32)}
    for name, values in inputs.items():
        np.save(folder / f"{name}.npy", values)
    np.save(folder / "node_time.npy", rng.integers(0, 1000, nodes))
    np.save(folder / "x.npy", rng.standard_normal((nodes, 4)).astype(np.float32))
    np.save(folder / "y.npy", rng.integers(0, 3, nodes))
    (folder / "splits").mkdir()
    (folder / "times").mkdir()
    for name, ids in (("train", np.arange(0, 300)), ("valid", np.arange(300, 350)), ("test", np.arange(350, 400))):
        np.save(folder / "splits" / f"{name}.npy", ids)
        np.save(folder / "times" / f"{name}.npy", rng.integers(0, 1000, len(ids)))
    run_gnnctl("import", "--format", "edgelist", "--dedup", "--features", folder / "x.npy", "--labels",
               folder / "y.npy", "--splits", folder / "splits", "--split-time", folder / "times", "--node-time",
               folder / "node_time.npy", *[f"--edge-attr={name}={folder / name}.npy" for name in inputs],
               folder / "edges.npy", out)


class Csc:
    """A homogeneous dataset's CSC with its edge ids, edge times and node times, from its folder."""

    def __init__(self, folder):
        self.indptr, self.indices = np.load(folder / "indptr.npy"), np.load(folder / "indices.npy")
        self.e_id, self.edge_time = np.load(folder / "e_id.npy"), np.load(folder / "edge.time.npy")
        self.node_time = np.load(folder / "node_time.npy")

    def candidates(self, node, seed_time, edge_level, window=None):
        """(time, edge id) of node's in-edges no newer than seed_time (and, with a window, no older than
        seed_time - window)."""
        span = slice(self.indptr[node], self.indptr[node + 1])
        times = self.edge_time[span] if edge_level else self.node_time[self.indices[span]]
        ids = self.e_id[span]
        oldest = -np.inf if window is None else seed_time - window
        return [(int(t), int(i)) for t, i in zip(times, ids) if oldest <= t <= seed_time]
