"""bench/rgat.py's GAT convolution (attention sums without stored messages) against the formula computed with
every message materialized, values and gradients; against PyG's GATConv where torch_geometric is installed."""
import pathlib
import sys

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import rgat  # noqa: E402


def random_graph(num_src, num_dst, num_edges, seed):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_src, (num_edges,), generator=g)
    dst = torch.randint(0, num_dst, (num_edges,), generator=g)
    return torch.stack([src, dst]), g


def direct_gat(conv, x_src, x_dst, edge_index):
    """PyG's GATConv formula, every edge's message kept: (W x_src)[j] weighted by the softmax over i's in-edges of
    LeakyReLU(a_src . W x_j + a_dst . W x_i)."""
    heads, channels = conv.heads, conv.channels
    h_src = conv.lin(x_src).view(-1, heads, channels)
    h_dst = conv.lin(x_dst).view(-1, heads, channels)
    src, dst = edge_index
    logits = torch.nn.functional.leaky_relu((h_src * conv.att_src).sum(-1)[src] + (h_dst * conv.att_dst).sum(-1)[dst],
                                            0.2)
    out = torch.zeros(x_dst.shape[0], heads, channels, dtype=x_src.dtype)
    for i in range(x_dst.shape[0]):
        mine = dst == i
        if mine.any():
            weights = torch.softmax(logits[mine], dim=0)
            out[i] = (weights.unsqueeze(-1) * h_src[src[mine]]).sum(0)
    return out.reshape(-1, heads * channels) + conv.bias


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_gat_conv_equals_the_formula_values_and_gradients(monkeypatch, chunk):
    monkeypatch.setattr(rgat, "EDGE_CHUNK", chunk)  # several chunks, and one
    torch.manual_seed(0)
    edge_index, g = random_graph(13, 9, 60, seed=1)
    conv = rgat.GATConv(6, 4, heads=3).double()
    x_src = torch.randn(13, 6, generator=g, dtype=torch.float64, requires_grad=True)
    x_dst = torch.randn(9, 6, generator=g, dtype=torch.float64, requires_grad=True)
    ours = conv(x_src, x_dst, edge_index)
    grads = torch.autograd.grad((ours * torch.arange(ours.numel()).view_as(ours).double()).sum(),
                                [x_src, x_dst, *conv.parameters()])
    theirs = direct_gat(conv, x_src, x_dst, edge_index)
    expected = torch.autograd.grad((theirs * torch.arange(theirs.numel()).view_as(theirs).double()).sum(),
                                   [x_src, x_dst, *conv.parameters()])
    assert ours.shape == (9, 12)
    torch.testing.assert_close(ours, theirs)
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got, want)
    # A destination without in-edges gets the bias alone.
    lonely = torch.tensor([[0], [8]])
    out = conv(x_src, x_dst, lonely)
    torch.testing.assert_close(out[3], conv.bias)


def test_attention_sum_gradients_by_gradcheck(monkeypatch):
    monkeypatch.setattr(rgat, "EDGE_CHUNK", 5)
    edge_index, g = random_graph(6, 4, 17, seed=2)
    alpha = torch.rand(17, 2, generator=g, dtype=torch.float64, requires_grad=True)
    x = torch.randn(6, 2, 3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, v: rgat.AttentionSum.apply(a, v, edge_index[0], edge_index[1], 4),
                                    (alpha, x))


def test_edge_softmax_sums_to_one_per_destination():
    edge_index, g = random_graph(10, 5, 40, seed=3)
    logits = torch.randn(40, 2, generator=g, dtype=torch.float64) * 30  # large: the shift matters
    weights = rgat.edge_softmax(logits, edge_index[1], 5)
    totals = torch.zeros(5, 2, dtype=torch.float64).index_add_(0, edge_index[1], weights)
    has_edges = torch.bincount(edge_index[1], minlength=5) > 0
    torch.testing.assert_close(totals[has_edges], torch.ones(int(has_edges.sum()), 2, dtype=torch.float64))


def test_rgat_sums_relations_into_each_type_and_reads_the_seed_type():
    torch.manual_seed(0)
    edge_types = [("paper", "cites", "paper"), ("author", "writes", "paper"), ("paper", "rev_writes", "author")]
    x = {"paper": torch.randn(7, 8), "author": torch.randn(5, 8)}
    edges = {edge_types[0]: random_graph(7, 7, 20, 4)[0], edge_types[1]: random_graph(5, 7, 12, 5)[0],
             edge_types[2]: random_graph(7, 5, 9, 6)[0]}
    model = rgat.RGAT(edge_types, 8, 16, 3, layers=2, heads=4, dropout=0.0).eval()
    out = model(x, edges)
    assert out.shape == (7, 3)
    # By hand: layer 1 per type, then layer 2 into papers, then the head.
    layer = [{"__".join(et): conv for et, conv in zip(edge_types, convs.values())} for convs in model.convs]
    key = ["__".join(et) for et in edge_types]
    paper = layer[0][key[0]](x["paper"], x["paper"], edges[edge_types[0]]) + \
        layer[0][key[1]](x["author"], x["paper"], edges[edge_types[1]])
    author = layer[0][key[2]](x["paper"], x["author"], edges[edge_types[2]])
    paper, author = torch.nn.functional.leaky_relu(paper), torch.nn.functional.leaky_relu(author)
    paper2 = (layer[1][key[0]](paper, paper, edges[edge_types[0]])
              + layer[1][key[1]](author, paper, edges[edge_types[1]]))
    torch.testing.assert_close(out, model.head(paper2))


def test_gat_conv_equals_pyg_gatconv():
    pyg = pytest.importorskip("torch_geometric.nn")
    torch.manual_seed(0)
    edge_index, g = random_graph(11, 8, 50, seed=7)
    ours = rgat.GATConv(6, 4, heads=2)
    theirs = pyg.GATConv(6, 4, heads=2, add_self_loops=False)
    with torch.no_grad():
        theirs.lin.weight.copy_(ours.lin.weight)
        theirs.att_src.copy_(ours.att_src)
        theirs.att_dst.copy_(ours.att_dst)
        theirs.bias.copy_(torch.randn(8))
        ours.bias.copy_(theirs.bias)
    x_src, x_dst = torch.randn(11, 6, generator=g), torch.randn(8, 6, generator=g)
    torch.testing.assert_close(ours(x_src, x_dst, edge_index), theirs((x_src, x_dst), edge_index), rtol=1e-5, atol=1e-5)


def hop_ordered_batch(seed):
    """A two-hop typed batch ordered by hop as gnnd's: papers [3, 4, 5] and authors [0, 2, 3] a hop; each
    relation's hop-h edges end in hop h-1 and start in hops 0..h."""
    g = torch.Generator().manual_seed(seed)
    nodes = {"paper": [3, 4, 5], "author": [0, 2, 3]}
    upto = {t: [sum(n[:h + 1]) for h in range(3)] for t, n in nodes.items()}
    relations = [("paper", "cites", "paper"), ("author", "writes", "paper"), ("paper", "rev_writes", "author")]
    edges, counts = {}, {}
    for et in relations:
        src, _, dst = et
        pieces, per_hop = [], []
        for hop in (1, 2):
            low, high = (0 if hop == 1 else upto[dst][0]), upto[dst][hop - 1]
            n = 6 if high > low else 0
            pieces.append(torch.stack([torch.randint(0, upto[src][hop], (n,), generator=g),
                                       torch.randint(low, max(high, low + 1), (n,), generator=g)]))
            per_hop.append(n)
        edges[et], counts[et] = torch.cat(pieces, 1), per_hop
    x = {t: torch.randn(sum(n), 8, generator=g) for t, n in nodes.items()}
    return relations, x, edges, nodes, counts


def test_rgat_trimmed_by_hop_gives_the_seeds_the_same_outputs():
    torch.manual_seed(0)
    relations, x, edges, nodes, counts = hop_ordered_batch(8)
    model = rgat.RGAT(relations, 8, 16, 3, layers=2, heads=4, dropout=0.0).eval()
    whole = model(x, edges)[:3]
    trimmed = model(x, edges, nodes, counts)
    assert trimmed.shape == (3, 3)  # layer 2 reads hops 0..1 and computes the seeds only
    torch.testing.assert_close(trimmed, whole)
