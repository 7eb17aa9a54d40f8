// The sampling rule, written once for the CPU and CUDA backends (host and device code include it):
// uniform neighbor sampling without replacement, PyG NeighborLoader semantics. Which k of a node's d
// in-neighbor positions are taken is a pure function of (seed, epoch, batch, hop, node id), so both
// backends, any thread count and any schedule give bit-identical batches.
#pragma once

#include <cstdint>
#include <cstring>
#ifndef __CUDA_ARCH__
#include <algorithm>
#include <utility>
#include <vector>
#endif

#include "common/base/philox.h"

namespace gnnd {

// Philox key purposes: each kind of draw under a session seed gets its own key.
enum class RandomPurpose : uint64_t { kNeighbors = 1, kSeedPermutation = 2, kNegatives = 3, kLabor = 4 };

struct SamplingKey {
  uint32_t key0, key1;
};

// The key for all draws of one purpose in one epoch.
GNND_HOST_DEVICE SamplingKey MakeSamplingKey(uint64_t seed, uint64_t epoch, RandomPurpose purpose) {
  const uint64_t k = Mix64(seed ^ Mix64(epoch * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(purpose)));
  return {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
}

// How many in-neighbors a node of in-degree `degree` contributes: all of them when fanout < 0 or
// degree <= fanout, else fanout.
GNND_HOST_DEVICE int64_t SampleCount(int64_t degree, int32_t fanout) {
  return (fanout < 0 || degree <= fanout) ? degree : fanout;
}

// `values` ascending. The sorted order is unique, so the host's std::sort and the device's sorts agree.
template <typename Value>
GNND_HOST_DEVICE void SortAscending(Value* values, int64_t count) {
#ifndef __CUDA_ARCH__
  std::sort(values, values + count);
#else
  if (count <= 32) {  // a few: insertion
    for (int64_t i = 1; i < count; ++i) {
      const Value x = values[i];
      int64_t at = i;
      for (; at > 0 && values[at - 1] > x; --at) values[at] = values[at - 1];
      values[at] = x;
    }
    return;
  }
  auto sift = [values](int64_t root, int64_t end) {  // more: heapsort, no scratch
    for (int64_t child; (child = 2 * root + 1) < end; root = child) {
      if (child + 1 < end && values[child + 1] > values[child]) ++child;
      if (values[root] >= values[child]) return;
      const Value x = values[root];
      values[root] = values[child];
      values[child] = x;
    }
  };
  for (int64_t root = count / 2; root-- > 0;) sift(root, count);
  for (int64_t end = count - 1; end > 0; --end) {
    const Value x = values[0];
    values[0] = values[end];
    values[end] = x;
    sift(0, end);
  }
#endif
}

// The parameters of the uniform and weighted rules beside a hop's fanout (SamplingSpec::neighbors), taken whole
// by both backends' draws, the count and the layout's bound: a new one is a field here and its use in the draws.
namespace neighbors {
struct Rule {
  // With replacement (PyG's replace=True): a node with any allowed in-edge makes exactly fanout draws.
  bool replace = false;

  // The rule as a hop of `fanout` draws: a fanout of -1 takes each in-edge once, with replacement or not.
  GNND_HOST_DEVICE Rule ForFanout(int32_t fanout) const { return Rule{.replace = replace && fanout >= 0}; }
  // Whether a node's draws are distinct in-edges (so a hop draws each edge once at most).
  GNND_HOST_DEVICE bool Distinct() const { return !replace; }
};
}  // namespace neighbors

// How many draws a node with `allowed` candidate in-edges makes: with replacement exactly fanout (none without a
// candidate); without, SampleCount.
GNND_HOST_DEVICE int64_t DrawCount(int64_t allowed, int32_t fanout, neighbors::Rule rule) {
  if (rule.ForFanout(fanout).replace) return allowed > 0 ? fanout : 0;
  return SampleCount(allowed, fanout);
}

// Chooses k = SampleCount(degree, fanout) < degree distinct positions in [0, degree) uniformly
// (Floyd's algorithm) and writes them to positions[0..k) in ascending order. Draws come from Philox
// under `key` with counter (node, relation, hop, batch, block): node < 2^48 (its id within its type) in
// the low 48 bits, the relation (< 256; 0 for a homogeneous graph) in the next 8, hop (1-based) in the
// top 8. `batch` is the global batch index (step * world_size + rank). Call only when k < degree
// (otherwise take positions 0..degree-1).
//
// The insertion keeps the list sorted at O(k) a draw; on the host, k above kFloydInsertionLimit takes
// ChoosePositionsBySorting's route to the same positions in O(k log k).
inline constexpr int64_t kFloydInsertionLimit = 256;

// Floyd's draw i of k over [0, degree): t uniform in [0, degree - k + i] (two draws per Philox block, `words`
// holding the block of draw i & ~1).
GNND_HOST_DEVICE uint64_t FloydDraw(SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation, uint64_t node,
                                    int64_t degree, int64_t k, int64_t i, Philox4x32& words) {
  if ((i & 1) == 0) {
    const Philox4x32 counter = {{static_cast<uint32_t>(node),
                                 static_cast<uint32_t>(node >> 32) | (relation << 16) | (hop << 24),
                                 static_cast<uint32_t>(batch), static_cast<uint32_t>(i >> 1)}};
    words = Philox4x32_10(counter, key.key0, key.key1);
  }
  const uint64_t random = (static_cast<uint64_t>(words.v[(i & 1) * 2]) << 32) | words.v[(i & 1) * 2 + 1];
  return Below64(random, static_cast<uint64_t>(degree - k + i) + 1);
}

// Floyd's step i: its draw t (FloydDraw's) into the sorted positions[0..i), or j = degree - k + i if t was taken
// (j exceeds every earlier pick, so it goes last). Reads positions[i] only after t: it may hold t itself (a GPU
// group draws every t_i first, into the positions, then one lane inserts them in order).
template <typename Position>
GNND_HOST_DEVICE void FloydInsert(Position* positions, int64_t degree, int64_t k, int64_t i, Position t) {
  int64_t at = i;
  while (at > 0 && positions[at - 1] > t) --at;
  if (at > 0 && positions[at - 1] == t) {
    positions[i] = static_cast<Position>(degree - k + i);
    return;
  }
  for (int64_t m = i; m > at; --m) positions[m] = positions[m - 1];
  positions[at] = t;
}

#ifndef __CUDA_ARCH__
// ChoosePositions' positions in O(k log k) (host only). Draw i takes t_i unless t_i was taken before, then
// j_i = degree - k + i; t_i was taken before iff an earlier draw t_m equals it, or t_i = j_m for an earlier m
// whose draw was taken that way (j_m is m's alone). One sort of the draws finds the first case for all i at
// once; one pass in draw order settles the second.
template <typename Position>
void ChoosePositionsBySorting(SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation, uint64_t node,
                              int64_t degree, int64_t k, Position* positions) {
  thread_local std::vector<std::pair<uint64_t, int64_t>> sorted;  // (t_i, i)
  thread_local std::vector<uint8_t> taken_late;                   // by i: first a repeat of an earlier t, then j_i
  sorted.resize(static_cast<size_t>(k));
  taken_late.assign(static_cast<size_t>(k), 0);
  Philox4x32 words{};
  for (int64_t i = 0; i < k; ++i) sorted[i] = {FloydDraw(key, batch, hop, relation, node, degree, k, i, words), i};
  std::sort(sorted.begin(), sorted.end());
  for (int64_t s = 0; s < k; ++s) {
    const auto [t, i] = sorted[s];
    positions[i] = static_cast<Position>(t);  // t_i, in draw order
    taken_late[i] = s > 0 && sorted[s - 1].first == t;
  }
  const int64_t first_j = degree - k;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t m = static_cast<int64_t>(positions[i]) - first_j;  // t_i = j_m
    taken_late[i] = taken_late[i] || (m >= 0 && m < i && taken_late[m]);
    if (taken_late[i]) positions[i] = static_cast<Position>(first_j + i);
  }
  std::sort(positions, positions + k);
}
#endif

template <typename Position>
GNND_HOST_DEVICE void ChoosePositions(SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation, uint64_t node,
                                      int64_t degree, int64_t k, Position* positions) {
#ifndef __CUDA_ARCH__
  if (k > kFloydInsertionLimit) return ChoosePositionsBySorting(key, batch, hop, relation, node, degree, k, positions);
#endif
  Philox4x32 words{};
  for (int64_t i = 0; i < k; ++i) {
    FloydInsert(positions, degree, k, i,
                static_cast<Position>(FloydDraw(key, batch, hop, relation, node, degree, k, i, words)));
  }
}

// The weighted rule (a session's weight_attr): a node's in-edges drawn without replacement, successively
// with probability proportional to their weights among those not yet drawn (Efraimidis and Spirakis). Each
// edge at position p of a node's list with weight w > 0 gets the key E_p / w, E_p = -ln U_p an exponential
// variate from Philox (counter as ChoosePositions', its last word 2^31 + p / 4, word p % 4 giving U_p); the
// k edges of smallest (key, p) are drawn, in that order (the first is the first draw: the smallest of
// independent exponentials E / w is edge i's with probability w_i / sum w). Weight 0 is never drawn.
//
// Every step is one IEEE-rounded operation (no fused multiply-add: the host is built with
// -ffp-contract=off, the device uses the _rn intrinsics), so both backends compute the same keys.
namespace weighted {
GNND_HOST_DEVICE double Add(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
GNND_HOST_DEVICE double Mul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
GNND_HOST_DEVICE double Div(double a, double b) {
#ifdef __CUDA_ARCH__
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// 2^n for n in [-1022, 1023], exact.
GNND_HOST_DEVICE double PowerOfTwo(int n) {
  const uint64_t bits = static_cast<uint64_t>(1023 + n) << 52;
#ifdef __CUDA_ARCH__
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double x = 0;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
#endif
}

// -ln((word + 1/2) / 2^32): an exponential variate from 32 random bits. word + 1/2 = m 2^e with m in
// [sqrt(1/2), sqrt(2)) (exact: a double holds it), ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, its
// series to s^25 (relative error near 1e-16, far below the float the key is rounded to).
GNND_HOST_DEVICE double Exponential(uint32_t word) {
  const double x = static_cast<double>(word) + 0.5;
#ifdef __CUDA_ARCH__
  const int leading_zeros = __clz(static_cast<int>(word));
#else
  const int leading_zeros = word == 0 ? 32 : __builtin_clz(word);
#endif
  int e = 31 - leading_zeros;         // floor(log2 x): -1 for word 0
  double m = Mul(x, PowerOfTwo(-e));  // exact (a multiply: a division would cost more for the same bits)
  if (m > 1.4142135623730951) {       // m in [sqrt(1/2), sqrt(2)): no cancellation below when x is near 2^32
    m = Mul(m, 0.5);
    ++e;
  }
  const double s = Div(Add(m, -1.0), Add(m, 1.0)), s2 = Mul(s, s);
  double series = Div(1.0, 25.0);
  for (int n = 23; n >= 1; n -= 2) series = Add(Mul(series, s2), Div(1.0, n));
  const double ln_m = Mul(Mul(s, series), 2.0);
  constexpr double kLn2 = 0.69314718055994530942;
  return Add(Mul(static_cast<double>(32 - e), kLn2), -ln_m);  // -ln(x / 2^32) = (32 - e) ln 2 - ln m
}

// Weights the rule orders exactly: 0 (never drawn) or from kMinWeight to kMaxWeight. A key E / w, E in
// (2^-34, 23), stays a normal float for these; a smaller weight's keys overflow to infinity and a larger one's
// lose their bits in subnormals, so distinct edges would tie and be drawn by position. Datasets are checked
// (GraphData::FirstUndrawableWeights) before a weighted session opens.
inline constexpr float kMinWeight = 0x1p-120f;
inline constexpr float kMaxWeight = 0x1p+90f;
GNND_HOST_DEVICE bool Drawable(float w) { return w == 0 || (w >= kMinWeight && w <= kMaxWeight); }
}  // namespace weighted

// Draws with replacement (DrawCount's): draw i of a node takes the 64-bit word i of Philox under `key` with
// counter (node, relation, hop, batch) as ChoosePositions', its last word 2^30 + i / 2 (apart from Floyd's blocks,
// below 2^30, and the weighted keys', from 2^31). Uniform: draw i is the allowed rank Below64(word, allowed).
// Weighted: draw i is the allowed position of positive weight whose share of the node's total holds
// U_i = (word >> 11) 2^-53: with S_p the sum of those weights up to p in list order (one IEEE addition at a time),
// the first p with U_i x total < S_p (the last such position if rounding leaves none). Either way the k draws come
// out ascending (the weighted ones by sorting the U_i first: one pass over the list then finds them all).
namespace replacement {
GNND_HOST_DEVICE uint64_t Word(SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation, uint64_t node,
                               int64_t i, Philox4x32& words) {
  if ((i & 1) == 0) {
    const Philox4x32 counter = {{static_cast<uint32_t>(node),
                                 static_cast<uint32_t>(node >> 32) | (relation << 16) | (hop << 24),
                                 static_cast<uint32_t>(batch), (1u << 30) + static_cast<uint32_t>(i >> 1)}};
    words = Philox4x32_10(counter, key.key0, key.key1);
  }
  return (static_cast<uint64_t>(words.v[(i & 1) * 2]) << 32) | words.v[(i & 1) * 2 + 1];
}

// k uniform draws over the ranks [0, allowed), ascending.
template <typename Position>
GNND_HOST_DEVICE void ChooseRanks(SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation, uint64_t node,
                                  int64_t allowed, int64_t k, Position* ranks) {
  Philox4x32 words{};
  for (int64_t i = 0; i < k; ++i) {
    ranks[i] =
        static_cast<Position>(Below64(Word(key, batch, hop, relation, node, i, words), static_cast<uint64_t>(allowed)));
  }
  SortAscending(ranks, k);
}

// k weighted draws into positions[0, k) (int64: it holds the sorted U_i first). `weight_of(p)` is position p's
// weight, 0 where it is not allowed; positions [0, degree).
template <typename WeightOf>
GNND_HOST_DEVICE void ChooseWeighted(SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation, uint64_t node,
                                     int64_t degree, WeightOf weight_of, int64_t k, int64_t* positions) {
  Philox4x32 words{};
  for (int64_t i = 0; i < k; ++i) {
    positions[i] = static_cast<int64_t>(Word(key, batch, hop, relation, node, i, words) >> 11);
  }
  SortAscending(positions, k);
  double total = 0;
  int64_t last = -1;
  for (int64_t p = 0; p < degree; ++p) {
    const float w = weight_of(p);
    if (w > 0) total = weighted::Add(total, static_cast<double>(w)), last = p;
  }
  const double unit = weighted::PowerOfTwo(-53);
  double sum = 0;
  int64_t i = 0;
  for (int64_t p = 0; p < degree && i < k; ++p) {
    const float w = weight_of(p);
    if (!(w > 0)) continue;
    sum = weighted::Add(sum, static_cast<double>(w));
    while (i < k && weighted::Mul(weighted::Mul(static_cast<double>(positions[i]), unit), total) < sum) {
      positions[i++] = p;
    }
  }
  for (; i < k; ++i) positions[i] = last;
}
}  // namespace replacement

namespace neighbors {
// The uniform rule's k = DrawCount(allowed, fanout, rule) ranks among a node's `allowed` candidates, ascending:
// `rule` as ForFanout gives it for the hop. Without replacement ChoosePositions' (all of them when k takes them
// all), with it replacement::ChooseRanks'.
template <typename Position>
GNND_HOST_DEVICE void ChooseRanks(Rule rule, SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation,
                                  uint64_t node, int64_t allowed, int64_t k, Position* ranks) {
  if (rule.replace) {
    replacement::ChooseRanks(key, batch, hop, relation, node, allowed, k, ranks);
  } else if (k < allowed) {
    ChoosePositions(key, batch, hop, relation, node, allowed, k, ranks);
  } else {
    for (int64_t i = 0; i < k; ++i) ranks[i] = static_cast<Position>(i);
  }
}
}  // namespace neighbors

// The random words of positions 4 block .. 4 block + 3 of a node's list (word p % 4 is position p's).
GNND_HOST_DEVICE Philox4x32 WeightedWords(SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation,
                                          uint64_t node, uint32_t block) {
  const Philox4x32 counter = {{static_cast<uint32_t>(node),
                               static_cast<uint32_t>(node >> 32) | (relation << 16) | (hop << 24),
                               static_cast<uint32_t>(batch), 0x80000000u | block}};
  return Philox4x32_10(counter, key.key0, key.key1);
}

// A draw's sort value: the key (a positive float, whose bits order as it does) above the position, so that
// comparing two of them compares (key, position). `word`: the position's random word.
GNND_HOST_DEVICE uint64_t WeightedDrawOf(uint32_t word, uint32_t position, float weight) {
  const float k = static_cast<float>(weighted::Div(weighted::Exponential(word), static_cast<double>(weight)));
#ifdef __CUDA_ARCH__
  const uint32_t bits = __float_as_uint(k);
#else
  uint32_t bits = 0;
  static_assert(sizeof(bits) == sizeof(k));
  std::memcpy(&bits, &k, sizeof(k));
#endif
  return (static_cast<uint64_t>(bits) << 32) | position;
}
GNND_HOST_DEVICE uint64_t WeightedDraw(SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation, uint64_t node,
                                       uint32_t position, float weight) {
  return WeightedDrawOf(WeightedWords(key, batch, hop, relation, node, position >> 2).v[position & 3], position,
                        weight);
}

// Keeps draws[0..*count) the smallest `k` draws seen, ascending: inserts `draw` if it is among them.
GNND_HOST_DEVICE void KeepSmallest(uint64_t draw, int64_t k, uint64_t* draws, int64_t* count) {
  if (*count == k && draw >= draws[k - 1]) return;
  int64_t at = *count < k ? (*count)++ : k - 1;
  while (at > 0 && draws[at - 1] > draw) {
    draws[at] = draws[at - 1];
    --at;
  }
  draws[at] = draw;
}

// The position a draw names.
GNND_HOST_DEVICE uint32_t DrawPosition(uint64_t draw) { return static_cast<uint32_t>(draw); }

// Disjoint batches (a temporal session's, or one opened with disjoint): each seed's subgraph is sampled and
// deduplicated on its own, and subgraph s (its seed's position in the batch) draws under its own key, so two
// subgraphs that reach one node at one hop draw independently.
GNND_HOST_DEVICE SamplingKey SubgraphKey(SamplingKey key, uint64_t subgraph) {
  const uint64_t k = Mix64(((static_cast<uint64_t>(key.key1) << 32) | key.key0) ^ Mix64(subgraph + 1));
  return {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
}

// The temporal rule (a session's time_attr): for a subgraph whose seed has time t, an in-edge is a candidate
// when its time -- the edge's own (edge-level), or its source node's (node-level) -- is at most t, and a
// link batch does not exclude it. A node's in-edges in time order ((time, id) ascending; id: the stored edge
// id where the relation keeps them, else the in-list offset) have the candidates as a prefix, less the
// excluded. Each node draws min(fanout, candidates): temporal_strategy "uniform" is the ordinary rule over the
// candidates in time order (ChooseAllowedPositions over the prefix with the excluded ranks not allowed: with
// every in-edge a candidate, the uniform rule over the list in time order); "last" takes the k most recent
// candidates (the highest ranks). Either way the drawn positions are written ascending.
enum class TemporalStrategy { kUniform, kLast };

namespace temporal {
// The policy's parameters as both backends' draws take them (TimeSpec::rule). A window W >= 0 (time_window, in the
// times' unit; PyG's ask, cuGraph-PyG's fixed window) keeps only in-edges no older than seed time - W: an in-edge
// is then a candidate iff seed_time - W <= t <= seed_time.
struct Rule {
  TemporalStrategy strategy = TemporalStrategy::kUniform;
  int64_t window = -1;  // none
};

GNND_HOST_DEVICE bool Eligible(int64_t time, int64_t seed_time) { return time <= seed_time; }
// The oldest time a window admits (seed_time - window, or the oldest there is where that would overflow).
GNND_HOST_DEVICE int64_t WindowStart(int64_t seed_time, int64_t window) {
  constexpr int64_t kOldest = static_cast<int64_t>(uint64_t{1} << 63);
  return seed_time < kOldest + window ? kOldest : seed_time - window;
}
GNND_HOST_DEVICE bool Eligible(int64_t time, int64_t seed_time, const Rule& rule) {
  return time <= seed_time && (rule.window < 0 || time >= WindowStart(seed_time, rule.window));
}
// Whether (time, id) is more recent than (other_time, other_id).
GNND_HOST_DEVICE bool MoreRecent(int64_t time, int64_t id, int64_t other_time, int64_t other_id) {
  return time > other_time || (time == other_time && id > other_id);
}

// A time-ordered neighborhood (TimeOrder, common/dataset/time_order.h): order[j], j < degree, is the in-list
// offset of the node's j-th oldest in-edge, by (time, id) ascending (MoreRecent's order). Its candidates for
// seed time t are then the prefix order[0, CandidateCount): one binary search, time_of(offset) read log2(degree)
// times.
template <typename TimeOf>
GNND_HOST_DEVICE int64_t CandidateCount(const uint32_t* order, int64_t degree, int64_t seed_time, TimeOf time_of) {
  int64_t lo = 0, hi = degree;  // the first rank whose time is newer than seed_time
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (Eligible(time_of(order[mid]), seed_time)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The rank in time order of in-list offset `offset`, whose (time, id) is (time, id): the neighborhood holds
// each (time, id) once (ids distinct, or offsets), so the search finds it.
template <typename TimeOf, typename IdOf>
GNND_HOST_DEVICE int64_t RankOf(const uint32_t* order, int64_t degree, int64_t time, int64_t id, TimeOf time_of,
                                IdOf id_of) {
  int64_t lo = 0, hi = degree;  // the first rank not older than (time, id)
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const uint32_t o = order[mid];
    if (MoreRecent(time, id, time_of(o), id_of(o))) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}
// A node's candidates: the ranks [first, end) of its time order (`end`: CandidateCount's).
struct Candidates {
  int64_t first = 0, end = 0;
};
// The first candidate rank of a node whose candidates end at `end`: 0, or with a window the first rank not older
// than its start (a binary search).
template <typename TimeOf>
GNND_HOST_DEVICE int64_t FirstCandidate(const uint32_t* order, int64_t end, int64_t seed_time, const Rule& rule,
                                        TimeOf time_of) {
  if (rule.window < 0) return 0;
  const int64_t start = WindowStart(seed_time, rule.window);
  int64_t lo = 0, hi = end;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (time_of(order[mid]) < start) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}
template <typename TimeOf>
GNND_HOST_DEVICE Candidates CandidatesOf(const uint32_t* order, int64_t degree, int64_t seed_time, const Rule& rule,
                                         TimeOf time_of) {
  const int64_t end = CandidateCount(order, degree, seed_time, time_of);
  return {FirstCandidate(order, end, seed_time, rule, time_of), end};
}
}  // namespace temporal

// LABOR-0 (a session's labor; Balin and Catalyurek, NeurIPS 2023; GraphBolt's sample_layer_neighbor): each
// source node t of a hop gets one random number r_t in [0, 1), shared by every destination of the hop, and a
// destination with d allowed in-edges (its in-degree, less a link batch's excluded ones) and fanout k keeps
// in-edge t -> it iff d <= k (or k = -1), else iff r_t < k / d: k in expectation, and destinations that
// share a source keep it together, so a batch holds fewer distinct nodes than the uniform rule's. An edge
// kept carries its weight 1 / P(kept) = d / k (1 where all are kept), for an unbiased mean over neighbors.
//
// r_t = X_t / 2^32, X_t a 32-bit word: U(g) = the high 32 bits of SplitMix64's output for t under the seed of
// (key (seed, epoch, kLabor), g, t's node type, hop): Mix64(seed + t * 0x9e3779b97f4a7c15) (Steele, Lea and Flood,
// OOPSLA 2014), the seed a chain of Mix64 over the key, g and (type, hop) (StreamSeed); hop 0 for every hop with
// layer_dependency (one r_t a batch). One 64-bit finalizer a source, not a Philox block: a LABOR draw computes
// X_t for every in-edge of every frontier node, and on a GPU that is what its time was (bench/notes/labor.md).
// batch_dependency K (1: none) makes r_t move smoothly through the batches of an epoch: batch b has
// g = floor(b / K), j = b mod K, and X_t = U(g) + floor(D f / 2^32) mod 2^32 with f = floor(j 2^32 / K), D the
// shorter way round the circle of 2^32 words from U(g) to U(g + 1) (U(g + 1) - U(g) mod 2^32 as a signed 32-bit
// number): U(g) at j = 0, reaching U(g + 1) at the next group's first batch. U(g) is uniform and independent of D,
// so X_t is exactly uniform in every batch (integers only: both backends agree bit for bit). GraphBolt moves a
// normal variate along a rotation instead; this moves r_t a quarter of the circle in K batches on average. An
// edge is kept iff X_t < ceil(k 2^32 / d), a probability within 2^-32 of k / d.
//
// A node keeps k in-edges in expectation but may keep up to all of them, so a batch's slot is sized by a hop bound
// of about 1.5 x the expected edges (common/batch/layout.cc, LaborHopEdges), not by in-degrees. A batch one of
// whose relations would hold more edges at a hop than its bound is drawn again, whole, under the next attempt's
// key (Key: attempt a mixed into the key), until one fits; after kMaxAttempts the batch fails (a batch without
// that hop's edges would be biased; layout.h, LaborOutgrownError). Both backends check the same bounds in the
// same order, so they agree.
namespace labor {
inline constexpr uint32_t kMaxAttempts = 64;

// The key of attempt `attempt` of a batch of `epoch`.
GNND_HOST_DEVICE SamplingKey Key(uint64_t seed, uint64_t epoch, uint32_t attempt) {
  const SamplingKey first = MakeSamplingKey(seed, epoch, RandomPurpose::kLabor);
  if (attempt == 0) return first;
  const uint64_t k = Mix64(((static_cast<uint64_t>(first.key1) << 32) | first.key0) ^ Mix64(0x4c41424fULL + attempt));
  return {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
}

struct Dependency {
  bool layer = false;    // the same r_t at every hop
  uint64_t batches = 1;  // K: r_t moves through K batches (1: fresh every batch)
};

// The SplitMix64 seed of U(g) for sources of node type `type` at `hop` (0 with layer_dependency).
GNND_HOST_DEVICE uint64_t StreamSeed(SamplingKey key, uint64_t group, uint32_t hop, uint32_t type) {
  const uint64_t k = (static_cast<uint64_t>(key.key1) << 32) | key.key0;
  return Mix64(Mix64(Mix64(k) + group) + ((static_cast<uint64_t>(type) << 8) | hop));
}

// U(g) of source `node`: the high half of SplitMix64's output at `node` under the stream's seed.
GNND_HOST_DEVICE uint32_t Word(uint64_t stream_seed, uint64_t node) {
  return static_cast<uint32_t>(Mix64(stream_seed + node * 0x9e3779b97f4a7c15ull) >> 32);
}

// What every X_t of one hop of one batch is drawn from, computed once for all its sources.
struct Stream {
  uint64_t seed = 0;       // U(g)'s
  uint64_t next_seed = 0;  // U(g + 1)'s (batch_dependency between two draws)
  uint32_t fraction = 0;   // f = floor(j 2^32 / K); 0: X_t = U(g)
};

// The stream of sources of node type `type` at `hop` (1-based) of batch `batch` (the global batch index).
GNND_HOST_DEVICE Stream StreamOf(SamplingKey key, Dependency dependency, uint64_t batch, uint32_t hop, uint32_t type) {
  const uint32_t h = dependency.layer ? 0 : hop;
  const uint64_t group = batch / dependency.batches, step = batch % dependency.batches;
  Stream s;
  s.seed = StreamSeed(key, group, h, type);
  if (step != 0) {
    s.next_seed = StreamSeed(key, group + 1, h, type);
    s.fraction = static_cast<uint32_t>((step << 32) / dependency.batches);  // step < K <= 2^31
  }
  return s;
}

// X_t of source `node` in `stream`.
GNND_HOST_DEVICE uint32_t Variate(const Stream& stream, uint64_t node) {
  const uint32_t u = Word(stream.seed, node);
  if (stream.fraction == 0) return u;
  const auto d = static_cast<int32_t>(Word(stream.next_seed, node) - u);  // the shorter way round
  const int64_t moved = (static_cast<int64_t>(d) * static_cast<int64_t>(stream.fraction)) >> 32;  // floor
  return u + static_cast<uint32_t>(moved);                                                        // mod 2^32
}

// X_t of source `node` (of node type `type`) at `hop` (1-based) of batch `batch`: one source's, for checks; a
// draw takes StreamOf once and Variate(stream, t) for each of its sources.
GNND_HOST_DEVICE uint32_t Variate(SamplingKey key, Dependency dependency, uint64_t batch, uint32_t hop, uint32_t type,
                                  uint64_t node) {
  return Variate(StreamOf(key, dependency, batch, hop, type), node);
}

// The words below which an edge into a destination of `allowed` in-edges and fanout `fanout` is kept:
// 2^32 (every word) when it keeps them all.
GNND_HOST_DEVICE uint64_t Threshold(int64_t allowed, int32_t fanout) {
  if (fanout < 0 || allowed <= fanout) return uint64_t{1} << 32;
  const uint64_t scaled = static_cast<uint64_t>(fanout) << 32;
  return (scaled + static_cast<uint64_t>(allowed) - 1) / static_cast<uint64_t>(allowed);  // ceil(k 2^32 / d)
}

GNND_HOST_DEVICE bool Keeps(uint32_t variate, uint64_t threshold) { return variate < threshold; }

// A kept edge's weight, 1 / P(kept): d / k rounded to float (one IEEE division), 1 where every edge is kept.
GNND_HOST_DEVICE float Weight(int64_t allowed, int32_t fanout) {
  if (fanout < 0 || allowed <= fanout) return 1.0f;
  return static_cast<float>(weighted::Div(static_cast<double>(allowed), static_cast<double>(fanout)));
}
}  // namespace labor

// Induced subgraphs (SamplingSpec::induced, PyG's subgraph_type="induced", as torch-sparse's undirected
// neighbor_sample builds them): the hops reach the batch's nodes by the rule above; its edges of a relation are
// then, for each node of the relation's destination type in local order (duplicate seeds each), its in-edges in
// CSC order whose source is a node of the batch, that source's first local index. A batch of N destination nodes
// holds at most min(the relation's edges, N x its largest in-degree) of them (layout.cc sizes slots so).

}  // namespace gnnd
