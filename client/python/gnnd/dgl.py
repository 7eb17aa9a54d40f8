"""DGL-style message-flow blocks of a gnnd batch, one per layer, outermost first.

gnnd's layout keeps each hop's nodes and edges as prefixes, so every block is a slice: the layer that
reads hop h (h = L for the first layer, 1 for the last) has the nodes of hops 0..h as sources, those of
hops 0..h-1 as destinations, and the edges of hops 1..h (edge_src/edge_dst local indices, int32, no copy).
The first block's sources are all of the batch's nodes (their features are batch.features); the last
block's destinations are the seeds (their labels are batch.labels).

    for batch in gnnd.Loader(...):
        h = batch.features
        for layer, block in zip(model.layers, gnnd.dgl.blocks(batch)):
            h = layer(block, h)

With DGL importable the blocks are dgl.create_block objects (idtype int32); otherwise gnnd.dgl.Block.
"""
from itertools import accumulate


class Block:
    """One layer's bipartite graph: src/dst are the edges' local source and destination node indices."""

    def __init__(self, num_src_nodes, num_dst_nodes, src, dst):
        self.num_src_nodes, self.num_dst_nodes, self.src, self.dst = num_src_nodes, num_dst_nodes, src, dst

    def num_edges(self):
        return len(self.src)

    def __repr__(self):
        return f"Block(num_src_nodes={self.num_src_nodes}, num_dst_nodes={self.num_dst_nodes}, " \
               f"num_edges={len(self.src)})"


def block_shapes(nodes_per_hop, edges_per_hop):
    """[(num_src_nodes, num_dst_nodes, num_edges)] per layer, outermost first, from the per-hop counts."""
    nodes = list(accumulate(nodes_per_hop))  # nodes[h]: nodes of hops 0..h
    edges = list(accumulate(edges_per_hop))  # edges[h - 1]: edges of hops 1..h
    hops = len(edges_per_hop)
    return [(nodes[h], nodes[h - 1], edges[h - 1]) for h in range(hops, 0, -1)]


def blocks(batch):
    """The blocks of a gnnd.Batch (numpy or torch arrays), outermost first."""
    try:
        import dgl
    except ImportError:
        dgl = None
    result = []
    for num_src, num_dst, num_edges in block_shapes(batch.nodes_per_hop, batch.edges_per_hop):
        src, dst = batch.edge_src[:num_edges], batch.edge_dst[:num_edges]
        if dgl is not None:
            result.append(dgl.create_block((src, dst), num_src_nodes=num_src, num_dst_nodes=num_dst,
                                           idtype=src.dtype, device=src.device))
        else:
            result.append(Block(num_src, num_dst, src, dst))
    return result
