"""What the temporal tests check batches against: a homogeneous dataset's CSC with its times."""
import numpy as np


class Csc:
    """A homogeneous dataset's CSC with its edge ids, edge times and node times, from its folder."""

    def __init__(self, folder):
        self.indptr, self.indices = np.load(folder / "indptr.npy"), np.load(folder / "indices.npy")
        self.e_id, self.edge_time = np.load(folder / "e_id.npy"), np.load(folder / "edge.time.npy")
        self.node_time = np.load(folder / "node_time.npy")

    def candidates(self, node, seed_time, edge_level):
        """(time, edge id) of node's in-edges no newer than seed_time."""
        span = slice(self.indptr[node], self.indptr[node + 1])
        times = self.edge_time[span] if edge_level else self.node_time[self.indices[span]]
        ids = self.e_id[span]
        return [(int(t), int(i)) for t, i in zip(times, ids) if t <= seed_time]
