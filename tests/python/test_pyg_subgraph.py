"""PyG's subgraph_type on gnnd's loaders. "bidirectional" is PyG's SamplerOutput.to_bidirectional of the
directional sample: every sampled edge in both directions, coalesced by (destination, source), no
duplicates; homogeneous batches keep e_id and the edge attributes of the edge each one came from, typed
relations made bidirectional lose them (as PyG's), per-hop counts are dropped. Checked against the
directional batch of the same seed, computed here from it. "induced" is every edge of the input graph between
the directional batch's nodes (PyG's, as torch-sparse builds it: by destination, then the input's order per
destination), with e_id and edge attributes, computed here from the input graph. Run by ctest with GNND and
GNNCTL set (PyG itself is not needed)."""
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


def expected_induced(edge_index, src_n_id, dst_n_id):
    """Every input edge whose ends are both in the batch as (source position, destination position, e_id), each
    end at its first position, for every position of a destination (a repeated seed's too), sorted."""
    src_at, dst_at = {}, {}
    for i, v in enumerate(src_n_id.tolist()):
        src_at.setdefault(v, i)
    for i, v in enumerate(dst_n_id.tolist()):
        dst_at.setdefault(v, i)
    by_destination = {}
    for e, (s, d) in enumerate(pairs(edge_index)):
        if s in src_at and d in dst_at:
            by_destination.setdefault(d, []).append((src_at[s], e))
    return sorted((s, position, e) for position, node in enumerate(dst_n_id.tolist())
                  for s, e in by_destination.get(node, []))


def induced_edges(store):
    """A batch's (source, destination, e_id), checked to be by destination (within one, the dataset's CSC
    order, which the C++ tests check), sorted."""
    got = [(s, d, e) for (s, d), e in zip(pairs(store.edge_index), store.e_id.tolist())]
    destinations = [d for _, d, _ in got]
    assert destinations == sorted(destinations)
    return sorted(got)


def test_homogeneous_induced_is_every_edge_between_the_directional_batchs_nodes(daemon):
    data = homogeneous()
    arguments = dict(num_neighbors=[3, 2], batch_size=16, dataset="homo", address=daemon.address)
    directional, induced = loaders(["directional", "induced"], **arguments)
    with directional, induced:
        assert len(directional) == len(induced)
        for one, two in zip(directional, induced):
            assert torch.equal(two.n_id, one.n_id)
            got = induced_edges(two)
            assert got == expected_induced(data["edge_index"], two.n_id, two.n_id)
            assert torch.equal(two.edge_attr, data["edge_attr"][two.e_id])
            assert len(got) > one.edge_index.shape[1]  # the last hop's nodes' in-edges among the batch too
            assert "num_sampled_nodes" not in two and "num_sampled_edges" not in two  # PyG's: none for induced
            assert two.batch_size == one.batch_size and torch.equal(two.x, one.x)


def test_typed_induced_holds_every_relations_edges_between_the_batchs_nodes(daemon):
    data = typed()
    arguments = dict(num_neighbors=[3, 2], input_nodes="paper", batch_size=12, dataset="typed",
                     address=daemon.address)
    directional, induced = loaders(["directional", "induced"], **arguments)
    with directional, induced:
        for one, two in zip(directional, induced):
            for t in ("paper", "author", "venue"):
                assert torch.equal(two[t].n_id, one[t].n_id)
                assert "num_sampled_nodes" not in two[t]
            for et in [k for k in data if isinstance(k, tuple)]:
                got = induced_edges(two[et])
                assert got == expected_induced(data[et]["edge_index"], two[et[0]].n_id, two[et[2]].n_id), et


def test_induced_link_batches_and_repeated_seeds(daemon):
    data = homogeneous()
    with gnnd.pyg.LinkNeighborLoader(None, num_neighbors=[2], edge_label_index=data["edge_index"][:, :40],
                                     batch_size=8, subgraph_type="induced", dataset="homo",
                                     address=daemon.address) as loader:
        for batch in loader:
            assert induced_edges(batch) == expected_induced(data["edge_index"], batch.n_id, batch.n_id)
    seeds = torch.tensor([5, 9, 5, 17])
    with gnnd.pyg.NeighborLoader(None, num_neighbors=[2], input_nodes=seeds, batch_size=4, subgraph_type="induced",
                                 dataset="homo", address=daemon.address) as loader:
        batch = next(iter(loader))
    assert batch.n_id[:4].tolist() == [5, 9, 5, 17]
    assert induced_edges(batch) == expected_induced(data["edge_index"], batch.n_id, batch.n_id)


def test_induced_refusals_and_unknown_types_say_why(daemon):
    base = dict(num_neighbors=[2], batch_size=10, dataset="homo", address=daemon.address)
    with pytest.raises(ValueError, match="'disjoint' sampling not supported for neighbor sampling with "
                                         "`subgraph_type='induced'`"):
        gnnd.pyg.NeighborLoader(None, subgraph_type="induced", disjoint=True, **base)
    with pytest.raises(Exception, match="induced subgraphs with LABOR sampling are not built"):
        gnnd.pyg.NeighborLoader(None, subgraph_type="induced", labor=True, **base)
    with pytest.raises(Exception, match="open.induced with open.exclude"):
        gnnd.pyg.LinkNeighborLoader(None, subgraph_type="induced", edge_label_index=torch.tensor([[1], [2]]),
                                    exclude="self", **base)
    with pytest.raises(ValueError, match="subgraph_type='both': one of 'directional', 'bidirectional'"):
        gnnd.pyg.NeighborLoader(None, subgraph_type="both", **base)


def test_a_raw_induced_loader_counts_every_edge_at_hop_0_and_has_no_dgl_blocks(daemon):
    import gnnd.dgl
    with gnnd.Loader(address=daemon.address, dataset="homo", split="all", batch_size=16, fanouts=[3, 2],
                     output="torch", induced=True, seed=7) as loader:
        batch = next(iter(loader))
        assert batch.edges_per_hop[0] == len(batch.edge_src) > 0 and batch.edges_per_hop[1:] == [0]
        with pytest.raises(ValueError, match="an induced batch's edges are every edge between its nodes, not by hop"):
            gnnd.dgl.blocks(batch)
