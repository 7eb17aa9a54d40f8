"""A typed (format_version 2) dataset directory, written here with numpy as an independent writer: gnnctl
validates and describes it, gnnd loads every array of its schema into shared memory and removes them all at
exit, and a session on it is refused with a clear FAILED_PRECONDITION until typed sampling is served."""
import os
import subprocess

import numpy as np
import pytest

import gnnd
from daemon_util import GNNCTL, Daemon

MANIFEST = """format_version: 2
node_types { name: "paper" num_nodes: 3 feature_dim: 2 feature_dtype: FEATURE_DTYPE_FLOAT16 num_classes: 2
             num_train: 2 num_valid: 1 }
node_types { name: "author" num_nodes: 2 }
relations { src_type: "paper" name: "cites" dst_type: "paper" num_edges: 3 index_dtype: INDEX_DTYPE_INT32 }
relations { src_type: "author" name: "writes" dst_type: "paper" num_edges: 3 index_dtype: INDEX_DTYPE_INT64 }
"""


def write_typed(path, writes_indices=(0, 1, 1)):
    path.mkdir()
    (path / "manifest.textproto").write_text(MANIFEST)
    arrays = {
        "paper___cites___paper.indptr": np.array([0, 1, 2, 3], np.int64),
        "paper___cites___paper.indices": np.array([1, 2, 0], np.int32),
        "author___writes___paper.indptr": np.array([0, 2, 2, 3], np.int64),
        "author___writes___paper.indices": np.array(writes_indices, np.int64),
        "paper.features": np.arange(6, dtype=np.float16).reshape(3, 2),
        "paper.labels": np.array([1, 0, 1], np.int64),
        "paper.train": np.array([0, 2], np.int64),
        "paper.valid": np.array([1], np.int64),
        "paper.test": np.array([], np.int64),
    }
    for name, values in arrays.items():
        np.save(path / f"{name}.npy", values)
    return path, arrays


def test_gnnctl_validates_and_names_the_bad_file(tmp_path):
    good, _ = write_typed(tmp_path / "good")
    proc = subprocess.run([GNNCTL, "validate", str(good)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "2 node types, 2 relations" in proc.stdout and "paper: 3 nodes, features 2 x float16" in proc.stdout
    bad, _ = write_typed(tmp_path / "bad", writes_indices=(0, 2, 1))
    proc = subprocess.run([GNNCTL, "validate", str(bad)], capture_output=True, text=True)
    assert proc.returncode != 0
    assert ("author___writes___paper.indices.npy: indices[1] = 2 is not a node id (type 'author' has 2 nodes)"
            in proc.stderr), proc.stderr


def test_gnnd_serves_the_schema_into_shared_memory_and_sessions_from_it(tmp_path):
    data, arrays = write_typed(tmp_path / "mag")
    name = f"typed{os.getpid()}"
    daemon = Daemon(tmp_path, f"--dataset={name}={data}")
    try:
        for array, values in arrays.items():
            segment = f"/dev/shm/{daemon.shm_prefix}.{name}.{array}"
            assert os.path.exists(segment), segment
            assert os.path.getsize(segment) == values.nbytes, array
        with open(f"/dev/shm/{daemon.shm_prefix}.{name}.paper.features", "rb") as f:
            assert f.read() == arrays["paper.features"].tobytes()
        listed = daemon.gnnctl("datasets").stdout
        assert f"{name}\t" in listed and "\t5 nodes\t6 edges\tpaper:float16,author:none\t" in listed, listed
        with gnnd.Loader(address=daemon.address, dataset=name, batch_size=2, fanouts=[2], output="numpy") as loader:
            batch = next(iter(loader))
            papers = batch["paper.node_ids"]
            np.testing.assert_array_equal(batch["paper.features"], arrays["paper.features"][papers])
            np.testing.assert_array_equal(batch["paper.labels"], arrays["paper.labels"][papers[:2]])
            assert "author.features" not in batch.arrays  # authors have none
    finally:
        assert daemon.stop() == 0
    assert not [f for f in os.listdir("/dev/shm") if f.startswith(f"{daemon.shm_prefix}.{name}.")]
