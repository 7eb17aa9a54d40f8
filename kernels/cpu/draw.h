// One frontier node's in-neighbor draw on the CPU, for the homogeneous and typed samplers alike: the shared
// rule (common/batch/sampling.h), or, where a link batch excludes some of its in-edges, the draw around them
// (link_rule.h's ChooseAllowedPositions), so the node still gets min(fanout, in-degree - excluded).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "common/batch/link_rule.h"
#include "common/batch/sampling.h"
#include "common/batch/spec.h"

namespace gnnd {

// Per-thread scratch of DrawInNeighbors.
struct DrawScratch {
  std::vector<int64_t> positions, excluded_positions, not_allowed;
  std::vector<uint64_t> draws;
};

// What the temporal rule (sampling.h) reads for one node's draw: its subgraph's seed time, and each in-edge's
// time: edge_times[position in the CSC] (edge-level), else node_times[source id] (node-level). "last" breaks
// ties by edge_ids[position in the CSC], or the position where it is null. `order`: the relation's time order
// (by CSC position; TimeOrderCache), of which the candidates are a prefix, found by a binary search.
struct TemporalDraw {
  const int64_t* edge_times = nullptr;
  const int64_t* node_times = nullptr;
  const int64_t* edge_ids = nullptr;
  TemporalStrategy strategy = TemporalStrategy::kUniform;
  int64_t seed_time = 0;
  const uint32_t* order = nullptr;
};

// What LABOR-0 (sampling.h, namespace labor) reads for one node's draw, and where its kept edges' weights go.
struct LaborDraw {
  SamplingKey key;  // labor::Key(seed, epoch, attempt)
  labor::Dependency dependency;
  uint32_t source_type = 0;  // the relation's source node type
  float* weights = nullptr;  // each kept edge's weight, in the order of the edges taken (null: not kept)
  int64_t room = INT64_MAX;  // edges the hop's bound has left: the draw takes no more
  bool overflowed = false;   // set when the node keeps more than `room`
};

// Appends the sources drawn for `node` (hop counts from 1, as the rule's counter) to `sampled`; returns how
// many. `excluded_sources`: the sources whose edges into `node` this batch never samples, ascending.
// `edge_positions`, if set, gets each drawn edge's position in the CSC, in the same order. `weights` (the
// relation's, in CSC order), if set, draws by the weighted rule instead of the uniform one; `temporal`, if
// set, by the temporal rule; `labor`, if set, by LABOR-0 (every allowed in-edge in list order, kept or not).
template <typename Index>
int64_t DrawInNeighbors(const SamplingKey& key, uint64_t batch_index, uint32_t hop, uint32_t relation, int64_t node,
                        const int64_t* indptr, const Index* indices, int32_t fanout,
                        std::span<const int64_t> excluded_sources, DrawScratch& scratch, std::vector<int64_t>& sampled,
                        int64_t* edge_positions = nullptr, const float* weights = nullptr,
                        const TemporalDraw* temporal = nullptr, LaborDraw* labor = nullptr) {
  const int64_t first = indptr[node], degree = indptr[node + 1] - first;
  std::vector<int64_t>& positions = scratch.positions;
  auto take = [&](int64_t p) {
    sampled.push_back(indices[first + p]);
    if (edge_positions != nullptr) *edge_positions++ = first + p;
  };
  std::vector<int64_t>& excluded = scratch.excluded_positions;
  excluded.clear();
  for (int64_t source : excluded_sources) {
    int64_t begin = 0, end = 0;
    SourceRange(indptr, indices, source, node, &begin, &end);
    for (int64_t p = begin; p < end; ++p) excluded.push_back(p);  // sources ascend, so do these
  }
  if (labor != nullptr) {
    const int64_t allowed = degree - static_cast<int64_t>(excluded.size());
    const uint64_t threshold = labor::Threshold(allowed, fanout);
    const float weight = labor::Weight(allowed, fanout);
    int64_t k = 0;
    for (int64_t p = 0, x = 0; p < degree; ++p) {
      const bool out = x < static_cast<int64_t>(excluded.size()) && excluded[x] == p;
      x += out;
      if (out || !labor::Keeps(labor::Variate(labor->key, labor->dependency, batch_index, hop, labor->source_type,
                                              static_cast<uint64_t>(indices[first + p])),
                               threshold)) {
        continue;
      }
      if (k == labor->room) {
        labor->overflowed = true;
        break;
      }
      take(p);
      if (labor->weights != nullptr) labor->weights[k] = weight;
      ++k;
    }
    return k;
  }
  if (temporal != nullptr) {
    const TemporalDraw& t = *temporal;
    auto time_of = [&](int64_t o) {
      return t.edge_times != nullptr ? t.edge_times[first + o] : t.node_times[indices[first + o]];
    };
    auto id_of = [&](int64_t o) { return t.edge_ids != nullptr ? t.edge_ids[first + o] : o; };
    const uint32_t* order = t.order + first;
    const int64_t count = temporal::CandidateCount(order, degree, t.seed_time, time_of);
    // The excluded candidates, as ranks in time order (ascending): ranks below count are the candidates.
    std::vector<int64_t>& not_allowed = scratch.not_allowed;
    not_allowed.clear();
    for (int64_t e : excluded) {
      if (temporal::Eligible(time_of(e), t.seed_time)) {
        not_allowed.push_back(temporal::RankOf(order, degree, time_of(e), id_of(e), time_of, id_of));
      }
    }
    std::sort(not_allowed.begin(), not_allowed.end());
    const auto skipped = static_cast<int64_t>(not_allowed.size());
    const int64_t k = SampleCount(count - skipped, fanout);
    positions.resize(static_cast<size_t>(k));
    ChooseTemporalRanks(key, batch_index, hop, relation, static_cast<uint64_t>(node),
                        t.strategy == TemporalStrategy::kLast, count, not_allowed.data(), skipped, k, positions.data());
    for (int64_t& p : positions) p = order[p];  // ranks, then their offsets
    std::sort(positions.begin(), positions.end());
    for (int64_t p : positions) take(p);
    return k;
  }
  if (weights != nullptr) {
    // The candidates: positive weight, not excluded. All of them in list order when the fanout takes them
    // all; else the k smallest draws, in draw order.
    const float* w = weights + first;
    int64_t candidates = 0;
    for (int64_t p = 0, x = 0; p < degree; ++p) {
      const bool out = x < static_cast<int64_t>(excluded.size()) && excluded[x] == p;
      x += out;
      candidates += !out && w[p] > 0;
    }
    const int64_t k = SampleCount(candidates, fanout);
    // The k smallest draws: kept sorted as they come while k is small, else all of them selected at the end
    // (the same k in the same order, in O(d + k log k) rather than O(d k)).
    const bool select = k > kFloydInsertionLimit && k < candidates;
    std::vector<uint64_t>& draws = scratch.draws;
    draws.resize(static_cast<size_t>(select ? candidates : k));
    int64_t drawn = 0;
    for (int64_t p = 0, x = 0; p < degree && k > 0; ++p) {
      const bool out = x < static_cast<int64_t>(excluded.size()) && excluded[x] == p;
      x += out;
      if (out || !(w[p] > 0)) continue;
      if (k == candidates) {
        take(p);
        continue;
      }
      const uint64_t draw =
          WeightedDraw(key, batch_index, hop, relation, static_cast<uint64_t>(node), static_cast<uint32_t>(p), w[p]);
      if (select) {
        draws[drawn++] = draw;
      } else {
        KeepSmallest(draw, k, draws.data(), &drawn);
      }
    }
    if (select) {
      std::nth_element(draws.begin(), draws.begin() + (k - 1), draws.end());
      draws.resize(static_cast<size_t>(k));
      std::sort(draws.begin(), draws.end());
    }
    if (k < candidates) {
      for (uint64_t d : draws) take(DrawPosition(d));
    }
    return k;
  }
  if (!excluded.empty()) {
    const int64_t num_excluded = static_cast<int64_t>(excluded.size());
    const int64_t k = SampleCount(degree - num_excluded, fanout);
    positions.resize(k);
    ChooseAllowedPositions(key, batch_index, hop, relation, static_cast<uint64_t>(node), degree, excluded.data(),
                           num_excluded, k, positions.data());
    for (int64_t p : positions) take(p);
    return k;
  }
  const int64_t k = SampleCount(degree, fanout);
  if (k == degree) {
    for (int64_t p = 0; p < degree; ++p) take(p);
    return k;
  }
  positions.resize(k);
  ChoosePositions(key, batch_index, hop, relation, static_cast<uint64_t>(node), degree, k, positions.data());
  for (int64_t p : positions) take(p);
  return k;
}

}  // namespace gnnd
