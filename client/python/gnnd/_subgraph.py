"""PyG's subgraph_type="bidirectional", applied to a batch's attributes as PyG's SamplerOutput.to_bidirectional
applies it to a sample: every sampled edge also in its reverse direction, duplicates merged (coalesced by
destination, then source). PyG does this after sampling, from the sample alone, so gnnd does it here, on the
device the batch is on: CPU and CUDA sessions give the same batches because their samples are the same."""
import collections
import warnings

import torch


def _bidirectional(edge_index, reverse_edge_index, num_nodes):
    """(edge_index, kept) of PyG's to_bidirectional: edge_index's edges and reverse_edge_index's reversed,
    coalesced in PyG's order (by destination, then source; duplicates merged); kept holds each remaining
    edge's position among the two inputs (the first of equal edges: edge_index's before the reversed)."""
    both = torch.cat([edge_index, reverse_edge_index.flip(0)], dim=1)
    key = both[1] * max(num_nodes, 1) + both[0]
    key, order = key.sort(stable=True)
    first = torch.ones_like(key, dtype=torch.bool)
    first[1:] = key[1:] != key[:-1]
    kept = order[first]
    return both[:, kept], kept


def homogeneous(mapping, edge_data):
    """A homogeneous batch's attributes made bidirectional, in place (PyG's): edge_index coalesced, e_id and
    the edge attributes (`edge_data`, their names) of each edge kept from the edge it came from, and no
    per-hop counts (PyG's to_bidirectional drops them: hops no longer say which edges are whose)."""
    edge_index = mapping["edge_index"]
    edges = edge_index.shape[1]
    mapping["edge_index"], kept = _bidirectional(edge_index, edge_index, len(mapping["n_id"]))
    rows = torch.where(kept < edges, kept, kept - edges)
    for name in edge_data:
        if name in mapping:
            mapping[name] = mapping[name][rows]
    mapping.pop("num_sampled_nodes", None)
    mapping.pop("num_sampled_edges", None)
    return mapping


def typed(mapping, edge_data):
    """A typed batch's attributes made bidirectional, in place, as PyG's HeteroSamplerOutput.to_bidirectional:
    each relation (but rev_ ones) with its reverse — (dst, rev_REL, src), else itself where src is dst, else
    the one relation from dst to src — both directions coalesced; those relations lose e_id and their edge
    attributes (`edge_data`: {edge type: names}); a relation without a reverse is left alone with a warning.
    No store keeps per-hop counts."""
    edge_types = [k for k in mapping if isinstance(k, tuple)]
    original = {et: mapping[et]["edge_index"] for et in edge_types}
    by_ends = collections.defaultdict(list)
    for et in edge_types:
        by_ends[(et[0], et[2])].append(et)

    def count(node_type):
        return mapping.get(node_type, {}).get("num_nodes", 0)

    changed = []
    for et in edge_types:
        src, rel, dst = et
        if rel.startswith("rev_"):
            continue
        reverse = (dst, f"rev_{rel}", src)
        nodes = max(count(src), count(dst))
        if src == dst and reverse not in original:
            mapping[et]["edge_index"], _ = _bidirectional(original[et], original[et], nodes)
            changed.append(et)
        elif reverse in original:
            edge_index, _ = _bidirectional(original[et], original[reverse], nodes)
            mapping[et]["edge_index"], mapping[reverse]["edge_index"] = edge_index, edge_index.flip(0)
            changed += [et, reverse]
        elif len(by_ends[(dst, src)]) == 1:
            reverse = by_ends[(dst, src)][0]
            mapping[et]["edge_index"], _ = _bidirectional(original[et], original[reverse], nodes)
            changed.append(et)
        else:
            warnings.warn(f"Cannot convert to bidirectional graph since the edge type {et} does not seem to "
                          "have a reverse edge type", stacklevel=4)
    for et in changed:
        for name in edge_data.get(et, ()):
            mapping[et].pop(name, None)
    for store in mapping.values():
        if isinstance(store, dict):
            store.pop("num_sampled_nodes", None)
            store.pop("num_sampled_edges", None)
    return mapping
