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
Where the batch carries edge data, each block's edata holds its edges' rows: dgl.EID ("_ID") the original
edge ids (batch.e_id), and each edge attribute under its name.

A link batch (binary negatives) gives what DGL's edge-prediction loader yields: (input_nodes, pair_graph,
neg_pair_graph, blocks) = link_blocks(batch). The pair graphs are over the batch's hop-0 nodes (the last
block's destinations), the positives and the negatives as their edges, in local indices.

A typed batch (gnnd.TypedBatch) gives one heterogeneous block per layer, the same slices per node type and
relation: its sources are each type's nodes of hops 0..h, its destinations those of hops 0..h-1, and each
relation's edges of hops 1..h (dgl.create_block with a dict of relations, or gnnd.dgl.HeteroBlock). A typed
link batch's link_blocks gives input_nodes per node type and pair graphs over each type's hop-0 nodes with the
seed relation's pairs as edges (dgl.heterograph, or gnnd.dgl.HeteroGraph).
"""
from itertools import accumulate


class Block:
    """One layer's bipartite graph: src/dst are the edges' local source and destination node indices; edata
    their data by name, as DGL's block.edata ("_ID", dgl.EID: each edge's original id)."""

    def __init__(self, num_src_nodes, num_dst_nodes, src, dst):
        self.num_src_nodes, self.num_dst_nodes, self.src, self.dst = num_src_nodes, num_dst_nodes, src, dst
        self.edata = {}

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


class HeteroBlock:
    """One layer's typed bipartite graph: per node type its source and destination counts, per relation
    (src, rel, dst) its edges' local (src, dst) indices; edata[name][(src, rel, dst)] their data, as DGL's
    block.edata of several edge types."""

    def __init__(self, num_src_nodes, num_dst_nodes, edges):
        self.num_src_nodes, self.num_dst_nodes, self.edges = num_src_nodes, num_dst_nodes, edges
        self.edata = {}

    def num_edges(self, edge_type):
        return len(self.edges[edge_type][0])

    def __repr__(self):
        return f"HeteroBlock(num_src_nodes={self.num_src_nodes}, num_dst_nodes={self.num_dst_nodes}, " \
               f"num_edges={ {k: len(v[0]) for k, v in self.edges.items()} })"


# The edge data's name for the original edge ids, as DGL's dgl.EID.
EID = "_ID"


def _edge_data(batch, prefix, num_edges):
    """{name: the first num_edges rows} of a relation's edge data ("_ID" for e_id), prefix "" or "KEY."."""
    views = batch._loader._views
    data = {}
    for name in views.edge_data[prefix]:
        rows = batch[prefix + name] if prefix else getattr(batch, name)
        data[EID if name == "e_id" else name] = rows[:num_edges]
    return data


class Graph:
    """A graph over num_nodes local nodes with edges src[i] -> dst[i] (a pair graph without DGL)."""

    def __init__(self, num_nodes, src, dst):
        self.num_nodes, self.src, self.dst = num_nodes, src, dst

    def num_edges(self):
        return len(self.src)

    def __repr__(self):
        return f"Graph(num_nodes={self.num_nodes}, num_edges={len(self.src)})"


class HeteroGraph:
    """A typed graph over num_nodes[t] local nodes of each type t, edges[(src, rel, dst)] = (src, dst) local
    indices (a typed pair graph without DGL)."""

    def __init__(self, num_nodes, edges):
        self.num_nodes, self.edges = num_nodes, edges

    def num_edges(self, edge_type):
        return len(self.edges[edge_type][0])

    def __repr__(self):
        return f"HeteroGraph(num_nodes={self.num_nodes}, num_edges={ {k: len(v[0]) for k, v in self.edges.items()} })"


def _typed_blocks(batch, dgl):
    hops = batch.counts["edge_hops"]
    nodes = {t: list(accumulate(batch.nodes_per_hop(t))) for t in batch.node_types}
    edges = {et: list(accumulate(batch.edges_per_hop(et))) for et in batch.edge_types}
    result = []
    for h in range(hops, 0, -1):
        num_src = {t: n[h] for t, n in nodes.items()}
        num_dst = {t: n[h - 1] for t, n in nodes.items()}
        pairs = {et: (batch["___".join(et) + ".edge_src"][:e[h - 1]], batch["___".join(et) + ".edge_dst"][:e[h - 1]])
                 for et, e in edges.items()}
        if dgl is not None:
            some = next(iter(pairs.values()))[0]
            block = dgl.create_block(pairs, num_src_nodes=num_src, num_dst_nodes=num_dst, idtype=some.dtype,
                                     device=some.device)
            for et, e in edges.items():
                block.edges[et].data.update(_edge_data(batch, "___".join(et) + ".", e[h - 1]))
        else:
            block = HeteroBlock(num_src, num_dst, pairs)
            for et, e in edges.items():
                for name, rows in _edge_data(batch, "___".join(et) + ".", e[h - 1]).items():
                    block.edata.setdefault(name, {})[et] = rows
        result.append(block)
    return result


def _check_by_hop(batch, what):
    """Blocks need a batch's edges by hop: an induced batch (gnnd.Loader(induced=True)) has none."""
    if getattr(getattr(batch, "_loader", None), "induced", False):
        raise ValueError(f"gnnd.dgl.{what}: an induced batch's edges are every edge between its nodes, not by hop, "
                         "so it has no blocks (open the loader without induced=True)")


def blocks(batch):
    """The blocks of a gnnd.Batch or gnnd.TypedBatch (numpy or torch arrays), outermost first."""
    _check_by_hop(batch, "blocks")
    try:
        import dgl
    except ImportError:
        dgl = None
    if hasattr(batch, "edge_types"):
        return _typed_blocks(batch, dgl)
    result = []
    for num_src, num_dst, num_edges in block_shapes(batch.nodes_per_hop, batch.edges_per_hop):
        src, dst = batch.edge_src[:num_edges], batch.edge_dst[:num_edges]
        if dgl is not None:
            block = dgl.create_block((src, dst), num_src_nodes=num_src, num_dst_nodes=num_dst, idtype=src.dtype,
                                     device=src.device)
        else:
            block = Block(num_src, num_dst, src, dst)
        block.edata.update(_edge_data(batch, "", num_edges))
        result.append(block)
    return result


def link_blocks(batch):
    """(input_nodes, pair_graph, neg_pair_graph, blocks) of a link batch with binary negatives (a gnnd.Batch
    of a link session, numpy or torch arrays), as DGL's edge-prediction loader yields them: pair_graph holds
    the batch's positive pairs, neg_pair_graph its negative pairs, both over its hop-0 nodes (slices of
    edge_label_index, no copy); dgl.graph objects when DGL is importable, gnnd.dgl.Graph otherwise."""
    _check_by_hop(batch, "link_blocks")
    try:
        import dgl
    except ImportError:
        dgl = None
    if hasattr(batch, "edge_types"):
        return _typed_link_blocks(batch, dgl)
    if "edge_label_index" not in batch.__dict__:
        raise ValueError("link_blocks: the batch has no pairs (a node batch, or triplet negatives: "
                         "use src_index, dst_pos_index and dst_neg_index)")
    pairs, positives, num_nodes = batch.edge_label_index, len(batch.input_id), batch.nodes_per_hop[0]
    graphs = []
    for rows in (pairs[:positives], pairs[positives:]):
        src, dst = rows[:, 0], rows[:, 1]
        if dgl is not None:
            graphs.append(dgl.graph((src, dst), num_nodes=num_nodes, idtype=src.dtype, device=src.device))
        else:
            graphs.append(Graph(num_nodes, src, dst))
    return (batch.node_ids, *graphs, blocks(batch))


def _typed_link_blocks(batch, dgl):
    """link_blocks of a gnnd.TypedBatch: input_nodes per node type, the pair graphs over each type's hop-0
    nodes with the seed relation's positive (then negative) pairs as edges, the typed blocks."""
    edge_type = batch.link_type
    key = "___".join(edge_type or ()) + ".edge_label_index"
    if edge_type is None or key not in batch.arrays:
        raise ValueError("link_blocks: the batch has no pairs (a node batch, or triplet negatives: "
                         "use the .src_index, .dst_pos_index and .dst_neg_index arrays)")
    pairs, positives = batch[key], batch.batch_size
    num_nodes = {t: batch.nodes_per_hop(t)[0] for t in batch.node_types}
    graphs = []
    for rows in (pairs[:positives], pairs[positives:]):
        edges = {edge_type: (rows[:, 0], rows[:, 1])}
        if dgl is not None:
            graphs.append(dgl.heterograph(edges, num_nodes_dict=num_nodes, idtype=rows.dtype, device=rows.device))
        else:
            graphs.append(HeteroGraph(num_nodes, edges))
    input_nodes = {t: batch[f"{t}.node_ids"] for t in batch.node_types}
    return (input_nodes, *graphs, _typed_blocks(batch, dgl))
