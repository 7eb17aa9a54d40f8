// One frontier node's in-neighbor draw on the CPU, for the homogeneous and typed samplers alike. Each draw
// policy of common/batch/sampling.h (uniform, weighted, temporal, LABOR-0) is a type with one face,
// Choose(node, scratch, offsets): the offsets into the node's in-edge list it takes, in the order the batch
// holds them. A link batch's excluded in-edges are found once, before any policy, and every policy draws over
// the others (link_rule.h), so a node still gets min(fanout, in-degree - excluded). The sampler picks a
// relation's policy once a hop and runs its frontier through it (DrawNode for each node).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "common/batch/link_rule.h"
#include "common/batch/sampling.h"
#include "common/batch/spec.h"

namespace gnnd {

// Per-thread scratch of the draws.
struct DrawScratch {
  std::vector<int64_t> excluded, offsets, not_allowed;
  std::vector<uint64_t> draws;
};

// One frontier node's draw, as every policy sees it.
template <typename Index>
struct NodeDraw {
  SamplingKey key{};  // the batch's, or its subgraph's (SubgraphKey)
  uint64_t batch_index = 0;
  uint32_t hop = 0;  // from 1, the rule's counter
  uint32_t relation = 0;
  int64_t node = 0;
  int64_t first = 0, degree = 0;   // its in-edges: CSC positions [first, first + degree)
  const Index* indices = nullptr;  // the relation's
  int32_t fanout = 0;
  std::span<const int64_t> excluded{};  // offsets this batch never samples, ascending
  int64_t seed_time = 0;                // its subgraph's (the temporal rule)

  int64_t allowed() const { return degree - static_cast<int64_t>(excluded.size()); }
  // Walks the offsets [0, degree), calling visit(offset) for those not excluded.
  template <typename Visit>
  void ForEachAllowed(Visit visit) const {
    size_t x = 0;
    for (int64_t p = 0; p < degree; ++p) {
      if (x < excluded.size() && excluded[x] == p) {
        ++x;
        continue;
      }
      if (!visit(p)) return;
    }
  }
};

// The uniform rule: min(fanout, allowed) positions without replacement, or with `replace` fanout draws with it.
struct UniformRule {
  static constexpr bool kMayOutgrowHop = false;  // at most fanout edges a node: the layout's bound holds
  neighbors::Rule rule;

  template <typename Index>
  void Choose(const NodeDraw<Index>& n, DrawScratch& /*scratch*/, std::vector<int64_t>& out) const {
    const neighbors::Rule hop_rule = rule.ForFanout(n.fanout);
    const int64_t k = DrawCount(n.allowed(), n.fanout, hop_rule);
    out.resize(static_cast<size_t>(k));
    if (n.excluded.empty()) {  // the ranks are the positions
      neighbors::ChooseRanks(hop_rule, n.key, n.batch_index, n.hop, n.relation, static_cast<uint64_t>(n.node), n.degree,
                             k, out.data());
    } else {
      ChooseAllowedPositions(n.key, n.batch_index, n.hop, n.relation, static_cast<uint64_t>(n.node), n.degree,
                             n.excluded.data(), static_cast<int64_t>(n.excluded.size()), k, out.data(), 0, hop_rule);
    }
  }
};

// The weighted rule: the candidates are the allowed in-edges of positive weight; all of them in list order
// when the fanout takes them all, else the k smallest draws, in draw order; with `replace`, fanout draws with
// replacement (replacement::ChooseWeighted), ascending.
struct WeightedRule {
  static constexpr bool kMayOutgrowHop = false;
  const float* weights = nullptr;  // the relation's, in CSC order
  neighbors::Rule rule;

  template <typename Index>
  void Choose(const NodeDraw<Index>& n, DrawScratch& scratch, std::vector<int64_t>& out) const {
    const float* w = weights + n.first;
    int64_t candidates = 0;
    n.ForEachAllowed([&](int64_t p) { return candidates += w[p] > 0, true; });
    const int64_t k = DrawCount(candidates, n.fanout, rule);
    out.clear();
    if (k == 0) return;
    if (rule.ForFanout(n.fanout).replace) {
      out.resize(static_cast<size_t>(k));
      auto weight_of = [&](int64_t p) {
        return std::binary_search(n.excluded.begin(), n.excluded.end(), p) ? 0.0f : w[p];
      };
      replacement::ChooseWeighted(n.key, n.batch_index, n.hop, n.relation, static_cast<uint64_t>(n.node), n.degree,
                                  weight_of, k, out.data());
      return;
    }
    if (k == candidates) {
      n.ForEachAllowed([&](int64_t p) {
        if (w[p] > 0) out.push_back(p);
        return true;
      });
      return;
    }
    // The k smallest draws: kept sorted as they come while k is small, else all of them selected at the end
    // (the same k in the same order, in O(d + k log k) rather than O(d k)).
    const bool select = k > kFloydInsertionLimit;
    std::vector<uint64_t>& draws = scratch.draws;
    draws.resize(static_cast<size_t>(select ? candidates : k));
    int64_t drawn = 0;
    n.ForEachAllowed([&](int64_t p) {
      if (!(w[p] > 0)) return true;
      const uint64_t draw = WeightedDraw(n.key, n.batch_index, n.hop, n.relation, static_cast<uint64_t>(n.node),
                                         static_cast<uint32_t>(p), w[p]);
      if (select) {
        draws[drawn++] = draw;
      } else {
        KeepSmallest(draw, k, draws.data(), &drawn);
      }
      return true;
    });
    if (select) {
      std::nth_element(draws.begin(), draws.begin() + (k - 1), draws.end());
      draws.resize(static_cast<size_t>(k));
      std::sort(draws.begin(), draws.end());
    }
    for (uint64_t d : draws) out.push_back(DrawPosition(d));
  }
};

// The temporal rule: the candidates are the in-edges at or before the seed time, a prefix of the relation's
// time order found by a binary search; "uniform" draws among them, "last" takes the latest. Each in-edge's
// time: edge_times[position in the CSC] (edge-level), else node_times[source id] (node-level); "last" breaks
// ties by edge_ids[position], or the position where it is null.
struct TemporalRule {
  static constexpr bool kMayOutgrowHop = false;
  const int64_t* edge_times = nullptr;
  const int64_t* node_times = nullptr;
  const int64_t* edge_ids = nullptr;
  temporal::Rule rule;
  const uint32_t* order = nullptr;  // the relation's time order (by CSC position; TimeOrderCache)

  template <typename Index>
  void Choose(const NodeDraw<Index>& n, DrawScratch& scratch, std::vector<int64_t>& out) const {
    auto time_of = [&](int64_t o) {
      return edge_times != nullptr ? edge_times[n.first + o] : node_times[n.indices[n.first + o]];
    };
    auto id_of = [&](int64_t o) { return edge_ids != nullptr ? edge_ids[n.first + o] : o; };
    const uint32_t* node_order = order + n.first;
    const temporal::Candidates candidates = temporal::CandidatesOf(node_order, n.degree, n.seed_time, rule, time_of);
    // The excluded candidates, as ranks in time order (ascending).
    std::vector<int64_t>& not_allowed = scratch.not_allowed;
    not_allowed.clear();
    for (int64_t e : n.excluded) {
      if (temporal::Eligible(time_of(e), n.seed_time, rule)) {
        not_allowed.push_back(temporal::RankOf(node_order, n.degree, time_of(e), id_of(e), time_of, id_of));
      }
    }
    std::sort(not_allowed.begin(), not_allowed.end());
    const auto skipped = static_cast<int64_t>(not_allowed.size());
    const int64_t k = SampleCount(candidates.end - candidates.first - skipped, n.fanout);
    out.resize(static_cast<size_t>(k));
    ChooseTemporalRanks(n.key, n.batch_index, n.hop, n.relation, static_cast<uint64_t>(n.node),
                        rule.strategy == TemporalStrategy::kLast, candidates, not_allowed.data(), skipped, k,
                        out.data());
    for (int64_t& p : out) p = node_order[p];  // ranks, then their offsets
    std::sort(out.begin(), out.end());
  }
};

// LABOR-0: every allowed in-edge in list order, kept or not by its source's variate; each kept edge weighs
// 1 / its inclusion probability. A hop may keep more edges than its slot holds: the sampler then draws the
// batch again (sampling.h, labor).
struct LaborRule {
  static constexpr bool kMayOutgrowHop = true;  // keeps edges by variates: a hop may outgrow its slot
  SamplingKey key;                              // labor::Key(seed, epoch, attempt)
  labor::Dependency dependency;
  uint32_t source_type = 0;  // the relation's source node type

  template <typename Index>
  void Choose(const NodeDraw<Index>& n, DrawScratch& /*scratch*/, std::vector<int64_t>& out) const {
    const uint64_t threshold = labor::Threshold(n.allowed(), n.fanout);
    const labor::Stream stream = labor::StreamOf(key, dependency, n.batch_index, n.hop, source_type);
    out.clear();
    n.ForEachAllowed([&](int64_t p) {
      if (labor::Keeps(labor::Variate(stream, static_cast<uint64_t>(n.indices[n.first + p])), threshold)) {
        out.push_back(p);
      }
      return true;
    });
  }
  // The weight of each edge the node keeps (a batch's edge_weight).
  template <typename Index>
  float EdgeWeight(const NodeDraw<Index>& n) const {
    return labor::Weight(n.allowed(), n.fanout);
  }
};

// Node n.node's draw by `policy`: its in-edges from indptr, those from `excluded_sources` (the sources whose
// edges into it this batch never samples, ascending) excluded, then the policy's offsets into `offsets`.
template <typename Index, typename Policy>
void DrawNode(const Policy& policy, NodeDraw<Index>& n, const int64_t* indptr,
              std::span<const int64_t> excluded_sources, DrawScratch& scratch, std::vector<int64_t>& offsets) {
  n.first = indptr[n.node];
  n.degree = indptr[n.node + 1] - n.first;
  scratch.excluded.clear();
  for (int64_t source : excluded_sources) {
    int64_t begin = 0, end = 0;
    SourceRange(indptr, n.indices, source, n.node, &begin, &end);
    for (int64_t p = begin; p < end; ++p) scratch.excluded.push_back(p);  // sources ascend, so do these
  }
  n.excluded = scratch.excluded;
  policy.Choose(n, scratch, offsets);
}

}  // namespace gnnd
