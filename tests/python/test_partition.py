"""gnnctl partition from the command line: N parts, each valid (gnnctl validate) with its own feature rows and the
owner map; gnnd without --peers refuses to serve a part, saying why, and keeps serving the rest (serving parts:
test_partitioned_serving.py).
Run by ctest with GNND and GNNCTL set."""
import numpy as np

from daemon_util import Daemon, generate, run_gnnctl


def test_parts_validate_and_gnnd_refuses_to_serve_one(tmp_path):
    whole = generate(tmp_path / "whole", "--seed", 4)
    out = run_gnnctl("partition", "--parts", 3, "--method", "range", whole, tmp_path / "parts").stdout
    assert out.count("of 3 (range, dataset id") == 3, out
    features = np.load(whole / "features.npy")
    rows = []
    for part in range(3):
        directory = tmp_path / "parts" / f"part-{part}"
        assert "valid." in run_gnnctl("validate", directory).stdout
        owner, owner_row = np.load(directory / "owner.npy"), np.load(directory / "owner_row.npy")
        held = np.load(directory / "features.npy")
        mine = np.flatnonzero(owner == part)
        assert np.array_equal(held[owner_row[mine]], features[mine])
        rows.append(len(held))
    assert sum(rows) == len(features) and min(rows) > 0
    refused = run_gnnctl("partition", "--parts", 2, whole, tmp_path / "parts", ok=False)
    assert refused.returncode != 0 and "exists" in refused.stderr

    daemon = Daemon(tmp_path, f"--dataset=whole={whole}", f"--dataset-roots={tmp_path}")
    try:
        loaded = run_gnnctl("load", "p0", tmp_path / "parts" / "part-0", "--address", daemon.address, ok=False)
        assert loaded.returncode != 0
        assert "is part 0 of 3 of partition" in loaded.stderr and "--peers" in loaded.stderr, loaded.stderr
        assert "whole" in run_gnnctl("datasets", "--address", daemon.address).stdout  # the rest still served
    finally:
        assert daemon.stop() == 0, daemon.output()
