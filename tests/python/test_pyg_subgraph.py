"""PyG's subgraph_type on gnnd's loaders. "bidirectional" is PyG's SamplerOutput.to_bidirectional of the
directional sample: every sampled edge in both directions, coalesced by (destination, source), no
duplicates; homogeneous batches keep e_id and the edge attributes of the edge each one came from, typed
relations made bidirectional lose them (as PyG's), per-hop counts are dropped. Checked against the
directional batch of the same seed, computed here from it. "induced" is refused saying why. Run by ctest
with GNND and GNNCTL set (PyG itself is not needed)."""
import warnings

import pytest

torch = pytest.importorskip("torch")

import gnnd.pyg  # noqa: E402
from daemon_util import Daemon  # noqa: E402

N = 200


def homogeneous():
    g = torch.Generator().manual_seed(3)
    edge_index = torch.randint(0, N, (2, 1500), generator=g)
    return dict(x=torch.randn(N, 4, generator=g), y=torch.randint(0, 3, (N,), generator=g),
                edge_index=edge_index, edge_attr=torch.arange(1500, dtype=torch.float32) * 2)


def typed():
    g = torch.Generator().manual_seed(4)
    writes = torch.stack([torch.randint(0, 60, (500,), generator=g), torch.randint(0, 90, (500,), generator=g)])
    return {"paper": {"x": torch.randn(90, 3, generator=g)}, "author": {"x": torch.randn(60, 3, generator=g)},
            "venue": {"num_nodes": 5},
            ("paper", "cites", "paper"): {"edge_index": torch.randint(0, 90, (2, 700), generator=g)},
            ("author", "writes", "paper"): {"edge_index": writes},
            ("paper", "rev_writes", "author"): {"edge_index": writes.flip(0)},
            ("paper", "in", "venue"): {"edge_index": torch.stack([torch.arange(90), torch.arange(90) % 5])}}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("subgraph")
    gnnd.pyg.save(homogeneous(), root / "homo")
    gnnd.pyg.save(typed(), root / "typed")
    d = Daemon(root, f"--dataset=homo={root / 'homo'}", f"--dataset=typed={root / 'typed'}")
    yield d
    assert d.stop() == 0, d.output()


def pairs(edge_index):
    return list(zip(edge_index[0].tolist(), edge_index[1].tolist()))


def expected_bidirectional(edge_index, reverse):
    """PyG's to_bidirectional, computed plainly: the edges and the reverse's reversed, each once, by (dst, src)."""
    both = set(pairs(edge_index)) | {(d, s) for s, d in pairs(reverse)}
    return sorted(both, key=lambda e: (e[1], e[0]))


def loaders(subgraph_types, **arguments):
    return [gnnd.pyg.NeighborLoader(None, subgraph_type=t, seed=7, **arguments) for t in subgraph_types]


def test_homogeneous_bidirectional_is_pygs_of_the_directional_sample(daemon):
    data = homogeneous()
    arguments = dict(num_neighbors=[4, 3], input_nodes=torch.arange(0, N, 3), batch_size=16, dataset="homo",
                     address=daemon.address)
    directional, bidirectional = loaders(["directional", "bidirectional"], **arguments)
    with directional, bidirectional:
        checked = 0
        for one, two in zip(directional, bidirectional):
            assert torch.equal(one.n_id, two.n_id) and torch.equal(one.x, two.x)  # the same sample
            assert pairs(two.edge_index) == expected_bidirectional(one.edge_index, one.edge_index)
            reversed_only = set(pairs(two.edge_index)) - set(pairs(one.edge_index))
            assert reversed_only, "a sample whose every edge has its reverse checks nothing"
            by_pair = {}  # each edge's id: the first sampled edge that is it, else the first whose reverse is it
            for reverse in (False, True):
                for (s, d), e in zip(pairs(one.edge_index), one.e_id.tolist()):
                    by_pair.setdefault((d, s) if reverse else (s, d), e)
            assert two.e_id.tolist() == [by_pair[p] for p in pairs(two.edge_index)]
            assert torch.equal(two.edge_attr, data["edge_attr"][two.e_id])
            assert "num_sampled_nodes" not in two and "num_sampled_edges" not in two  # as PyG's
            assert two.batch_size == one.batch_size and torch.equal(two.y, one.y)
            checked += 1
        assert checked == len(directional)


def test_typed_bidirectional_pairs_each_relation_with_its_reverse(daemon):
    arguments = dict(num_neighbors=[3, 2], input_nodes="paper", batch_size=20, dataset="typed",
                     address=daemon.address)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        directional, bidirectional = loaders(["directional", "bidirectional"], **arguments)
        with directional, bidirectional:
            for one, two in zip(directional, bidirectional):
                cites, writes, rev = ("paper", "cites", "paper"), ("author", "writes", "paper"), (
                    "paper", "rev_writes", "author")
                # A relation from a type to itself without a rev_ relation: its own reverse.
                assert pairs(two[cites].edge_index) == expected_bidirectional(one[cites].edge_index,
                                                                              one[cites].edge_index)
                # A relation and its rev_ one: each the other reversed.
                assert pairs(two[writes].edge_index) == expected_bidirectional(one[writes].edge_index,
                                                                               one[rev].edge_index)
                assert torch.equal(two[rev].edge_index, two[writes].edge_index.flip(0))
                for et in (cites, writes, rev):
                    assert "e_id" not in two[et]  # PyG's: the edges no longer are the input's rows
                # A relation with no reverse stays as sampled, with its e_id.
                venue = ("paper", "in", "venue")
                assert torch.equal(two[venue].edge_index, one[venue].edge_index)
                assert torch.equal(two[venue].e_id, one[venue].e_id)
                for t in ("paper", "author", "venue"):
                    assert torch.equal(two[t].n_id, one[t].n_id)
                    assert "num_sampled_nodes" not in two[t]
                assert "num_sampled_edges" not in two[cites]
    said = [str(w.message) for w in warned if "bidirectional" in str(w.message)]
    assert said and "('paper', 'in', 'venue')" in said[0], said


def test_link_batches_are_made_bidirectional_too(daemon):
    with gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[3], edge_label_index=torch.randint(0, N, (2, 40)),
                                     batch_size=8, subgraph_type="bidirectional", dataset="homo",
                                     address=daemon.address) as loader:
        batch = next(iter(loader))
    edges = pairs(batch.edge_index)
    assert edges and all((d, s) in set(edges) for s, d in edges)
    assert edges == sorted(set(edges), key=lambda e: (e[1], e[0]))
    assert batch.edge_label_index.shape == (2, 8)  # the seeds are untouched


def test_induced_and_unknown_types_are_refused_saying_why(daemon):
    base = dict(num_neighbors=[2], batch_size=10, dataset="homo", address=daemon.address)
    with pytest.raises(ValueError, match="subgraph_type='induced' is not supported yet"):
        gnnd.pyg.NeighborLoader(None, subgraph_type="induced", **base)
    with pytest.raises(ValueError, match="subgraph_type='both': one of 'directional', 'bidirectional'"):
        gnnd.pyg.NeighborLoader(None, subgraph_type="both", **base)
