#!/usr/bin/python3
"""Does LABOR-* pay beyond LABOR-0? Expected distinct sources and edges one hop keeps from the same frontier,
LABOR-0 against LABOR-i (the paper's importance sampling by fixed-point iterations), on a dataset's CSC.

    /usr/bin/python3 bench/labor_star.py --dataset DIR [--fanouts 15,10,5] [--iterations 3] [--seed 0]

LABOR-0 keeps in-edge t -> s with probability min(1, k / d_s), one r_t per source shared by every destination.
LABOR-i gives each source a weight pi_t (all 1 at first) and keeps t -> s iff r_t <= c_s pi_t, where c_s solves
sum over s's in-edges of 1 / min(1, c_s pi_t) = d_s^2 / k (the estimator's variance held at the uniform rule's),
then sets pi_t to t's inclusion probability max_s min(1, c_s pi_t) and repeats. A source's inclusion probability is
max_s min(1, c_s pi_t), an edge's min(1, c_s pi_t): the sums are the expected sources (feature rows) and edges.
Seeds: 1024 of the train split; each next frontier is a LABOR-0 draw's sources. Prints one line per hop.
"""
import argparse

import numpy as np


def in_edges(indptr, indices, frontier):
    """(source, destination position, in-degree of each frontier node) of the frontier's in-edges."""
    starts, ends = indptr[frontier], indptr[frontier + 1]
    degrees = ends - starts
    destinations = np.repeat(np.arange(len(frontier)), degrees)
    sources = np.concatenate([np.asarray(indices[a:b]) for a, b in zip(starts, ends)])
    return sources, destinations, degrees


def solve_c(pi_of_edge, destinations, degrees, fanout, count):
    """Each destination's c_s by bisection (in log space) on its variance constraint."""
    target = degrees.astype(float) ** 2 / fanout
    low, high = np.full(count, 1e-9), np.full(count, 1e9)
    for _ in range(60):
        c = np.sqrt(low * high)
        total = np.bincount(destinations, weights=1.0 / np.minimum(1.0, c[destinations] * pi_of_edge), minlength=count)
        too_few = total > target  # fewer edges kept than the constraint allows: c must grow
        low, high = np.where(too_few, c, low), np.where(too_few, high, c)
    return np.sqrt(low * high)


def hop(indptr, indices, frontier, fanout, iterations):
    """[(expected sources, expected edges) for LABOR-0 .. LABOR-iterations]."""
    sources, destinations, degrees = in_edges(indptr, indices, frontier)
    distinct, source_of_edge = np.unique(sources, return_inverse=True)
    every = degrees[destinations] <= fanout  # lists of at most k: every in-edge
    pi = np.ones(len(distinct))
    out = []
    for i in range(iterations + 1):
        c = fanout / np.maximum(degrees, 1) if i == 0 else solve_c(pi[source_of_edge], destinations, degrees, fanout,
                                                                    len(frontier))
        kept = np.where(every, 1.0, np.minimum(1.0, c[destinations] * pi[source_of_edge]))
        included = np.zeros(len(distinct))
        np.maximum.at(included, source_of_edge, kept)
        out.append((included.sum(), kept.sum()))
        pi = included
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    indptr = np.load(f"{args.dataset}/indptr.npy")
    indices = np.load(f"{args.dataset}/indices.npy", mmap_mode="r")
    rng = np.random.default_rng(args.seed)
    frontier = rng.choice(np.load(f"{args.dataset}/train.npy"), 1024, replace=False)
    for h, fanout in enumerate(int(f) for f in args.fanouts.split(",")):
        res = hop(indptr, indices, frontier, fanout, args.iterations)
        (s0, e0), (sn, en) = res[0], res[-1]
        print(f"hop {h + 1} (k {fanout}, frontier {len(frontier)}): expected sources / edges " +
              ", ".join(f"LABOR-{i} {s:.0f} / {e:.0f}" for i, (s, e) in enumerate(res)) +
              f"; LABOR-{args.iterations} / LABOR-0: sources {sn / s0:.3f}, edges {en / e0:.2f}", flush=True)
        sources, destinations, degrees = in_edges(indptr, indices, frontier)  # the next frontier: a LABOR-0 draw
        distinct, source_of_edge = np.unique(sources, return_inverse=True)
        r = rng.random(len(distinct))
        kept = (degrees[destinations] <= fanout) | (r[source_of_edge] < fanout / np.maximum(degrees[destinations], 1))
        frontier = np.unique(sources[kept])


if __name__ == "__main__":
    main()
