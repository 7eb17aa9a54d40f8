"""The R-GAT of MLPerf Training's GNN benchmark (its reference `RGNN`, model "rgat"): per layer a GAT convolution
per relation (PyG's GATConv(in, hidden // heads, heads, add_self_loops=False): one linear map shared by sources
and destinations, LeakyReLU(0.2) attention, heads concatenated, a bias), summed over the relations into each
node type; LeakyReLU and dropout between layers; a linear head on the seed type.

Why not PyG's GATConv itself: it keeps every edge's message (E x heads x C) for the backward pass, and a batch of
1024 IGBH seeds at [15, 10, 5] has ~10 M edges a layer: more than one H100 holds at hidden 512. Here the weighted
sum over each node's in-edges is one autograd function that walks the edges in chunks and keeps only the
attention weights (E x heads), recomputing the gathered rows in the backward pass. Same function as PyG's (the
tests compare both where torch_geometric is installed); the destination's attention term is x_dst (W^T a_dst),
an exact reordering that skips the destinations' linear map.
"""
import math

import torch
import torch.nn.functional as F

EDGE_CHUNK = 1 << 20  # edges a pass gathers at once: 1 M x 512 float32 = 2 GiB transient


def wide(t):
    """t in float32 at least (sums of bf16 terms lose too much)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


class AttentionSum(torch.autograd.Function):
    """out[d, h] = sum over edges e into d of alpha[e, h] * x[src[e], h] (float32 sums), without keeping the
    gathered E x H x C rows for the backward pass."""

    @staticmethod
    def forward(ctx, alpha, x, src, dst, num_dst):
        out = wide(x.new_zeros(num_dst, *x.shape[1:]))
        for begin in range(0, src.numel(), EDGE_CHUNK):
            part = slice(begin, begin + EDGE_CHUNK)
            out.index_add_(0, dst[part], wide(x[src[part]]) * alpha[part].unsqueeze(-1).to(out.dtype))
        ctx.save_for_backward(alpha, x, src, dst)
        return out.to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        alpha, x, src, dst = ctx.saved_tensors
        grad_alpha = torch.empty_like(alpha)
        grad_x = wide(torch.zeros_like(x))
        for begin in range(0, src.numel(), EDGE_CHUNK):
            part = slice(begin, begin + EDGE_CHUNK)
            at_dst = grad[dst[part]].to(grad_x.dtype)
            grad_alpha[part] = (at_dst * x[src[part]].to(grad_x.dtype)).sum(-1).to(alpha.dtype)
            grad_x.index_add_(0, src[part], at_dst * alpha[part].unsqueeze(-1).to(grad_x.dtype))
        return grad_alpha, grad_x.to(x.dtype), None, None, None


def edge_softmax(logits, dst, num_dst):
    """Softmax of each destination's in-edges' logits (E x H), as PyG's utils.softmax."""
    index = dst.unsqueeze(-1).expand_as(logits)
    with torch.no_grad():  # the shift does not change the softmax: no gradient through it
        peak = logits.new_full((num_dst, logits.shape[1]), -math.inf).scatter_reduce_(0, index, logits, "amax")
    weights = (logits - peak[dst]).exp()
    total = torch.zeros_like(peak).index_add_(0, dst, weights)
    return weights / (total[dst] + 1e-16)


class GATConv(torch.nn.Module):
    """PyG's GATConv(in_channels, out_channels, heads, add_self_loops=False) on a bipartite (x_src, x_dst) pair."""

    def __init__(self, in_channels, out_channels, heads):
        super().__init__()
        self.heads, self.channels = heads, out_channels
        self.lin = torch.nn.Linear(in_channels, heads * out_channels, bias=False)
        self.att_src = torch.nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = torch.nn.Parameter(torch.empty(1, heads, out_channels))
        self.bias = torch.nn.Parameter(torch.zeros(heads * out_channels))
        for weight in (self.lin.weight, self.att_src, self.att_dst):  # glorot, as PyG
            torch.nn.init.xavier_uniform_(weight.view(-1, weight.shape[-1]) if weight.dim() == 3 else weight)

    def forward(self, x_src, x_dst, edge_index):
        heads, channels = self.heads, self.channels
        h_src = self.lin(x_src).view(-1, heads, channels)
        # (W x) . a per head = x . (W^T a): the attention terms from the inputs by a heads-wide product, with no
        # second N x (heads x C) tensor kept for the backward pass (and none at all for the destinations).
        weight = self.lin.weight.view(heads, channels, -1)
        a_src = wide(x_src @ (weight * self.att_src.view(heads, channels, 1)).sum(1).t())
        a_dst = wide(x_dst @ (weight * self.att_dst.view(heads, channels, 1)).sum(1).t())
        src, dst = edge_index[0], edge_index[1]
        alpha = edge_softmax(F.leaky_relu(a_src[src] + a_dst[dst], 0.2), dst, x_dst.shape[0])
        out = AttentionSum.apply(alpha, h_src, src, dst, x_dst.shape[0])
        return out.reshape(-1, heads * channels) + self.bias


class RGAT(torch.nn.Module):
    """MLPerf's reference R-GAT: `layers` layers of a GATConv per relation (hidden // heads channels, `heads`
    heads), summed per destination type; LeakyReLU and dropout between layers; a linear head on `seed_type`.
    Every node type enters at `in_channels` (IGBH gives every type 1024-wide features).

    Given each type's num_sampled_nodes and each relation's num_sampled_edges (PyG's names; a batch whose nodes
    and edges are ordered by hop, as gnnd's), layer i of L reads only hops 0..L-i of the nodes and the edges
    into hops 0..L-i-1, as PyG's trim_to_layer (the reference's with_trim): the seeds' outputs are the same, the
    later layers' work a fraction."""

    def __init__(self, edge_types, in_channels, hidden, classes, layers=3, heads=4, dropout=0.2, seed_type="paper"):
        super().__init__()
        self.edge_types, self.seed_type, self.dropout = list(edge_types), seed_type, dropout
        self.convs = torch.nn.ModuleList(
            torch.nn.ModuleDict({"__".join(et): GATConv(in_channels if i == 0 else hidden, hidden // heads, heads)
                                 for et in self.edge_types}) for i in range(layers))
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x_dict, edge_index_dict, num_sampled_nodes_dict=None, num_sampled_edges_dict=None):
        layers = len(self.convs)
        for i, convs in enumerate(self.convs):
            out = {}
            for et in self.edge_types:
                edge_index = edge_index_dict.get(et)
                src, _, dst = et
                if edge_index is None or src not in x_dict or dst not in x_dict:
                    continue
                x_src, x_dst = x_dict[src], x_dict[dst]
                if num_sampled_nodes_dict is not None:  # sources in hops 0..L-i, the rest of the layer's inputs
                    hops = layers - i
                    x_src = x_src[:sum(num_sampled_nodes_dict[src][:hops + 1])]
                    x_dst = x_dst[:sum(num_sampled_nodes_dict[dst][:hops])]
                    edge_index = edge_index[:, :sum(num_sampled_edges_dict[et][:hops])]
                y = convs["__".join(et)](x_src, x_dst, edge_index)
                out[dst] = y if dst not in out else out[dst] + y
            if i + 1 < len(self.convs):
                out = {t: F.dropout(F.leaky_relu(y), self.dropout, self.training) for t, y in out.items()}
            x_dict = out
        return self.head(x_dict[self.seed_type])
