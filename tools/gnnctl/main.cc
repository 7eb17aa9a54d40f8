// gnnctl: the command-line tool for datasets.
//   gnnctl import --format ogb|ogb-bin|graphbolt|edgelist|mag240m SRC OUT_DIR [--undirected] [--dedup] ...
//   gnnctl generate --preset tiny|products|papers [--scale S] [--seed N] OUT_DIR
//   gnnctl validate DIR
//   gnnctl shm list | shm attach NAME | shm remove NAME
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/base/flags.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"
#include "common/batch/batch.h"
#include "common/dataset/dataset.h"
#include "common/dataset/dataset_writer.h"
#include "common/dataset/schema.h"
#include "common/dataset/shm_store.h"
#include "tools/dataset/edge_attrs.h"
#include "tools/dataset/hotness.h"
#include "tools/dataset/import.h"
#include "tools/dataset/partition.h"
#include "tools/dataset/synthetic.h"
#include "tools/dataset/synthetic_typed.h"
#include "tools/dataset/times.h"
#include "tools/gnnctl/daemon_commands.h"
#include "tools/gnnctl/sample.h"

ABSL_FLAG(std::string, format, "", "import: source format (ogb, ogb-bin, graphbolt, edgelist, mag240m)");
ABSL_FLAG(std::string, num_nodes, "",
          "import: node counts, N (edgelist) or T=N,T=N (mag240m) (default: features' rows or largest id + 1)");
ABSL_FLAG(bool, undirected, false, "import: add the reverse of every edge");
ABSL_FLAG(bool, dedup, false, "import: drop parallel edges and self-loops");
ABSL_FLAG(bool, clamp, false,
          "import: store feature values past the dtype's range, and +-inf, as its largest finite value (else refused)");
ABSL_FLAG(bool, add_reverse, false,
          "import and generate (typed graphs): add (t, rev_r, h) for every relation (h, r, t)");
ABSL_FLAG(std::string, split_scheme, "", "import (ogb, ogb-bin): the folder under split/ (default: the only one)");
ABSL_FLAG(std::string, feature_dtype, "",
          "import/generate: float32, float16, bfloat16 or float8_e4m3fn (default: as the source)");
ABSL_FLAG(std::string, features, "", "import (edgelist): node features, an (N, D) .npy");
ABSL_FLAG(std::string, labels, "", "import (edgelist): node labels, an (N,) .npy (-1 or NaN: unlabeled)");
ABSL_FLAG(std::string, splits, "", "import (edgelist): a directory with train.npy, valid.npy, test.npy");
ABSL_FLAG(std::string, edge_splits, "",
          "import (edgelist): link prediction's seed edges, a directory with train.npy, valid.npy, test.npy "
          "((2, E) each, any of them) and optional SPLIT_label.npy (E,), SPLIT_neg.npy (E, K)");
ABSL_FLAG(std::vector<std::string>, edge_attr, {},
          "import (edgelist): an edge attribute NAME=FILE.npy, (E,) or (E, D), one row per edge in the input's "
          "order (repeatable); a text edge list's third column is the attribute edge_weight. generate "
          "(homogeneous presets), bare: edge_weight (float32 in (0, 1]) and edge_feat (4 x float32) per edge");
ABSL_FLAG(std::vector<std::string>, node_attr, {},
          "import: a node attribute, NAME=FILE.npy (edgelist) or TYPE.NAME=FILE.npy (mag240m): one row per node in "
          "id order, carried into batches under NAME by node (repeatable)");
ABSL_FLAG(std::vector<std::string>, node_time, {},
          "import (every format): each node's time for temporal sampling, FILE.npy (N,) of integers; a typed "
          "dataset's TYPE=FILE.npy, one per timed type (repeatable)");
ABSL_FLAG(std::string, node_time_name, "",
          "import: another name of the node times, which open.time_attr then takes as it takes \"node_time\" (e.g. "
          "time, the PyG attribute they came from)");
ABSL_FLAG(std::string, split_time, "",
          "import: each node split's seed times, a directory with train.npy, valid.npy, test.npy (integers, one per "
          "seed in the split's order; typed: T/train.npy, ... per node type T). A link split's times: "
          "SPLIT_time.npy beside its seed edges in --edge-splits");
ABSL_FLAG(bool, temporal, false,
          "generate: node times (node_time = the node's id within its type) and each edge's int64 attribute time "
          "(its later endpoint's), for temporal sampling; with --link-relation, each split pair's time likewise "
          "(SPLIT_edge_time)");
ABSL_FLAG(bool, edge_ids, false,
          "import (edgelist, mag240m): store each edge's input row (e_id) even without edge attributes (with them, "
          "always)");
ABSL_FLAG(std::string, link_relation, "",
          "generate (typed presets): give this relation (src___rel___dst) edge splits for link prediction "
          "(5 % valid and 5 % test held out of the graph, the rest train)");
ABSL_FLAG(std::string, preset, "tiny", "generate: tiny, products or papers; typed: mag or igbh");
ABSL_FLAG(double, scale, 1.0, "generate: multiplies the preset's node and edge counts");
ABSL_FLAG(std::optional<int64_t>, feature_dim, std::nullopt, "generate: feature width (default: the preset's)");
ABSL_FLAG(uint64_t, seed, 0, "generate: random seed; sample, hotness: the session seed; partition: random's seed");
ABSL_FLAG(uint32_t, parts, 2, "partition: how many parts");
ABSL_FLAG(std::string, method, "random",
          "partition: random (each node's part a hash of the seed and its id), range (contiguous id ranges) or metis "
          "(METIS's k-way partition of the structure)");
ABSL_FLAG(int, threads, 0, "worker threads (0: all cores)");
ABSL_FLAG(std::string, dataset, "", "sample, hotness: the dataset directory");
ABSL_FLAG(std::string, split, gnnd::kDefaultSplit,
          "sample: train, valid, test or all (every node of the seed type); hotness: train, valid or test");
ABSL_FLAG(std::string, node_type, "", "sample (typed datasets): the seeds' node type (default: the one with splits)");
ABSL_FLAG(int64_t, batch_size, 1024, "sample, hotness: seeds per batch");
ABSL_FLAG(std::vector<std::string>, fanouts, std::vector<std::string>({"15", "10", "5"}),
          "sample, hotness: in-neighbors per node per hop, comma-separated (-1: all)");
ABSL_FLAG(uint64_t, epoch, 0, "sample: epoch");
ABSL_FLAG(std::string, edge_split, "",
          "sample: a link batch, its positives from this edge split (train, valid or test)");
ABSL_FLAG(std::string, edge_type, "",
          "sample (typed link batches): the seed edges' relation src___rel___dst (default: the one with the split)");
ABSL_FLAG(std::string, neg_sampling, "none",
          "sample (link batches): none, binary or triplet negatives, or fixed (the edge split's own, as triplets)");
ABSL_FLAG(int32_t, neg_amount, 1, "sample (link batches): negatives per positive");
ABSL_FLAG(bool, strict_negatives, false, "sample (link batches): redraw a negative that is an edge");
ABSL_FLAG(std::string, exclude, "none",
          "sample (link batches): seed edges kept out of message passing: none, self or reverse");
ABSL_FLAG(int64_t, step, 0, "sample: step within the epoch (this rank's)");
ABSL_FLAG(std::string, open_fields, "",
          "sample: more of the session's open request, as OpenSession fields in protobuf text format, each "
          "replacing what the flags set for it (what a trainer's open_fields sends)");
ABSL_FLAG(int32_t, rank, 0, "sample: this trainer's rank");
ABSL_FLAG(int32_t, world_size, 1, "sample: number of trainer ranks");
ABSL_FLAG(bool, labor, false,
          "sample: LABOR-0 instead of the uniform rule (each source one random number shared by every destination "
          "of the hop; batches carry edge_weight)");
ABSL_FLAG(bool, layer_dependency, false, "sample (with --labor): the same random numbers at every hop");
ABSL_FLAG(int64_t, batch_dependency, 0,
          "sample (with --labor): the random numbers move smoothly over this many consecutive batches");
ABSL_FLAG(bool, shuffle, true, "sample: permute the split every epoch");
ABSL_FLAG(bool, drop_last, false, "sample: drop the incomplete last batch (and the rank remainder)");
ABSL_FLAG(std::string, out, "batch.npz", "sample: output .npz");
ABSL_FLAG(std::string, device, "cpu", "sample: the backend, cpu or cuda:N");
ABSL_FLAG(std::string, address, "", "gnnd's address (default: $GNND_ADDRESS, else unix:/tmp/gnnd.sock)");
ABSL_FLAG(bool, huge_pages, false, "load: back the dataset with 2 MiB transparent huge pages");
ABSL_FLAG(std::string, feature_cache, "",
          "load: keep the features on storage, read through a host cache of this size (2GiB); empty: in memory");
ABSL_FLAG(int32_t, look_ahead, 0, "load with --feature-cache: batches each session samples ahead (default 8)");
ABSL_FLAG(int64_t, presample_batches, 200, "hotness: batches counted per epoch (0: the whole epoch)");
ABSL_FLAG(bool, hot_order, true,
          "import/generate: also store hot_order.npy, the GPU hot tier's ranking (expected reads under --fanouts)");
ABSL_FLAG(bool, write, false, "hotness: store the ranking as hot_order.npy in the dataset directory");
ABSL_FLAG(std::string, instance, gnnd::kDefaultInstance,
          "shm: the gnnd instance whose shared memory to attach to or remove (list shows every instance's)");
ABSL_FLAG(double, wait, 0,
          "status, datasets, stats, load, unload: wait up to SECONDS for gnnd to serve (0: not at all)");
ABSL_FLAG(double, watch, 0, "stats: refresh every SECONDS with rates and stage latencies, until interrupted");

namespace gnnd::gnnctl {
namespace {

constexpr char kUsage[] = R"(gnnctl: datasets for gnnd.
  gnnctl import --format ogb|ogb-bin|graphbolt|edgelist SRC OUT_DIR [--undirected] [--dedup]
                [--split-scheme NAME] [--feature-dtype float32|float16|bfloat16|float8_e4m3fn]
                [--add-reverse]   (ogb, typed: OGB's heterogeneous layout gives a typed dataset)
                [--features F.npy] [--labels L.npy [--splits DIR]] [--edge-splits DIR] [--num-nodes N]
                                 (edgelist: SRC is text 'src dst' lines or a (2, E) .npy; each array optional)
                [--num-nodes T=N,...]   (mag240m: OGB-LSC's processed .npy layout, typed)
                [--node-time F.npy | --node-time TYPE=F.npy ...]   each node's time (integers), any format
                [--node-attr NAME=F.npy | --node-attr TYPE.NAME=F.npy ...]   (edgelist, mag240m) a node attribute:
                                 one row per node, carried into batches under NAME
                [--split-time DIR]   each node split's seed times: DIR/train.npy, ... (typed: DIR/T/train.npy)
  gnnctl generate --preset tiny|products|papers|mag|igbh [--scale S] [--seed N] [--feature-dtype T] [--feature-dim D]
                  [--edge-attr] [--temporal]   (node times; each edge's attribute time)
                  [--add-reverse] [--link-relation src___rel___dst]   (mag, igbh) OUT_DIR
                                 both also store hot_order.npy, the GPU hot tier's ranking by expected reads
                                 under --fanouts (default 15,10,5); --hot-order=false: none
  gnnctl sample --dataset DIR [--split train] [--batch-size B] [--fanouts 15,10,5] [--seed S] [--epoch E]
                [--node-type T]   (typed datasets: the seeds' type; --fanouts for every relation)
                [--step T] [--rank r --world-size W] [--noshuffle] [--drop-last] [--device cpu|cuda:N]
                [--edge-split train [--neg-sampling binary|triplet|fixed [--neg-amount K] [--strict-negatives]]
                 [--exclude self|reverse] [--edge-type src___rel___dst]]   a link batch (--edge-type: a
                                 typed dataset's relation, the one with the split by default)
                --out batch.npz
  gnnctl hotness --dataset DIR [--split train] [--batch-size B] [--fanouts 15,10,5] [--seed S]
                 [--presample-batches N] [--write]
                                 rank the nodes by how often sampling reads their rows and print the hit rate
                                 of a GPU cache of the top rows per ranking (--write: hot_order.npy)
  gnnctl validate DIR            check every array and print a summary
  gnnctl partition --parts N [--method random|range|metis] [--seed S] DATASET OUT
                                 OUT/part-0 ... OUT/part-(N-1): each the whole structure and the feature rows of
                                 the nodes it owns, with the owner map (gnnd --peers serves a part)
  gnnctl status | datasets | stats [--watch S]      ask a running gnnd (--address, default unix:/tmp/gnnd.sock;
                                 --wait S: up to S seconds for one just started, with any of these commands)
  gnnctl load NAME DATASET_DIR [--huge-pages]       load a dataset into a running gnnd, with progress
                [--feature-cache 2GiB [--look-ahead 8]]  features stay on storage behind a host cache
  gnnctl unload NAME
  gnnctl shm list                datasets in shared memory, their state and gnnd instance
  gnnctl shm attach NAME         attach read-only, print the summary and a CRC32 of every array (--instance)
  gnnctl shm remove NAME         remove a dataset's segments (also a stale, half-loaded set; --instance))";

std::string Address() { return absl::GetFlag(FLAGS_address).empty() ? DefaultAddress() : absl::GetFlag(FLAGS_address); }

int Threads() { return absl::GetFlag(FLAGS_threads) > 0 ? absl::GetFlag(FLAGS_threads) : DefaultThreads(); }

absl::StatusOr<v1::FeatureDType> FeatureDTypeFlag() {
  const std::string name = absl::GetFlag(FLAGS_feature_dtype);
  if (name.empty()) return v1::FEATURE_DTYPE_UNSPECIFIED;
  return ParseFeatureDType(name, "--feature-dtype");
}

absl::Status Usage(absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(problem, "\n", kUsage));
}

absl::StatusOr<std::vector<int32_t>> Fanouts() {
  std::vector<int32_t> fanouts;
  for (const std::string& f : absl::GetFlag(FLAGS_fanouts)) {
    int32_t fanout;
    if (!absl::SimpleAtoi(f, &fanout))
      return absl::InvalidArgumentError(absl::StrCat("--fanouts: '", f, "' is not an integer"));
    fanouts.push_back(fanout);
  }
  return fanouts;
}

// import and generate rank the nodes with --fanouts: checked before anything is written.
absl::StatusOr<std::vector<int32_t>> HotOrderFanouts() {
  GNND_ASSIGN_OR_RETURN(std::vector<int32_t> fanouts, Fanouts());
  if (absl::GetFlag(FLAGS_hot_order)) GNND_RETURN_IF_ERROR(CheckHopFanouts(fanouts));
  return fanouts;
}

// After import or generate: the hot tier's ranking (unless --hot-order=false), then the summary.
absl::Status Summarize(const std::string& dir, const std::vector<int32_t>& fanouts) {
  GNND_ASSIGN_OR_RETURN(DatasetDir dataset, DatasetDir::Open(dir));
  if (absl::GetFlag(FLAGS_hot_order)) {
    GNND_ASSIGN_OR_RETURN(const std::string stored, dataset::WriteHotOrder(dir, "train", fanouts, Threads()));
    absl::PrintF("%s\n", stored);
  }
  absl::PrintF("%s: %s\n", dir, dataset.Summary());
  return absl::OkStatus();
}

absl::Status RunImport(const std::vector<std::string>& args) {
  if (args.size() != 2) return Usage("import takes SRC and OUT_DIR");
  dataset::ImportOptions options;
  options.undirected = absl::GetFlag(FLAGS_undirected);
  options.dedup = absl::GetFlag(FLAGS_dedup);
  options.clamp = absl::GetFlag(FLAGS_clamp);
  options.add_reverse = absl::GetFlag(FLAGS_add_reverse);
  options.split_scheme = absl::GetFlag(FLAGS_split_scheme);
  GNND_ASSIGN_OR_RETURN(options.feature_dtype, FeatureDTypeFlag());
  options.features_npy = absl::GetFlag(FLAGS_features);
  options.labels_npy = absl::GetFlag(FLAGS_labels);
  options.splits_dir = absl::GetFlag(FLAGS_splits);
  options.edge_splits_dir = absl::GetFlag(FLAGS_edge_splits);
  options.split_times_dir = absl::GetFlag(FLAGS_split_time);
  const bool edgelist = absl::GetFlag(FLAGS_format) == "edgelist";
  if (!options.edge_splits_dir.empty() && !edgelist) return Usage("--edge-splits: only --format edgelist takes it");
  for (const std::string& flag : absl::GetFlag(FLAGS_edge_attr)) {
    if (!edgelist) return Usage("--edge-attr: only --format edgelist takes it");
    GNND_ASSIGN_OR_RETURN(dataset::EdgeAttributeInput input, dataset::ParseEdgeAttributeFlag(flag));
    for (const dataset::EdgeAttributeInput& given : options.edge_attrs) {
      if (given.name == input.name) return Usage(absl::StrCat("--edge-attr: '", input.name, "' is given twice"));
    }
    options.edge_attrs.push_back(std::move(input));
  }
  for (const std::string& flag : absl::GetFlag(FLAGS_node_attr)) {
    if (!edgelist && absl::GetFlag(FLAGS_format) != "mag240m") {
      return Usage("--node-attr: only --format edgelist and mag240m take it");
    }
    GNND_ASSIGN_OR_RETURN(dataset::NodeAttributeInput input, dataset::ParseNodeAttributeFlag(flag));
    for (const dataset::NodeAttributeInput& given : options.node_attrs) {
      if (given.type == input.type && given.attr.name == input.attr.name) {
        return Usage(absl::StrCat("--node-attr: '", flag.substr(0, flag.find('=')), "' is given twice"));
      }
    }
    options.node_attrs.push_back(std::move(input));
  }
  options.edge_ids = absl::GetFlag(FLAGS_edge_ids);
  if (options.edge_ids && !edgelist && absl::GetFlag(FLAGS_format) != "mag240m") {
    return Usage("--edge-ids: only --format edgelist and mag240m take it");
  }
  for (const std::string& flag : absl::GetFlag(FLAGS_node_time)) {
    GNND_ASSIGN_OR_RETURN(dataset::NodeTimeInput input, dataset::ParseNodeTimeFlag(flag));
    for (const dataset::NodeTimeInput& given : options.node_times) {
      if (given.type == input.type) {
        return Usage(absl::StrCat("--node-time: ", input.type.empty() ? "the node times" : "'" + input.type + "'",
                                  " given twice"));
      }
    }
    options.node_times.push_back(std::move(input));
  }
  options.node_time_name = absl::GetFlag(FLAGS_node_time_name);
  if (!options.node_time_name.empty()) {
    if (options.node_times.empty()) return Usage("--node-time-name: names the node times: give --node-time too");
    if (absl::Status named = CheckNodeTimeName(options.node_time_name); !named.ok()) {
      return Usage(absl::StrCat("--node-time-name: ", named.message()));
    }
  }
  for (absl::string_view pair : absl::StrSplit(absl::GetFlag(FLAGS_num_nodes), ',', absl::SkipEmpty())) {
    const std::pair<std::string, std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    int64_t count = 0;
    if (edgelist && absl::SimpleAtoi(pair, &count) && count >= 1) {
      options.num_nodes[""] = count;
      continue;
    }
    if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &count) || count < 1) {
      return Usage(
          absl::StrCat("--num-nodes: '", pair, "' is not ", edgelist ? "N" : "TYPE=COUNT", " with a count >= 1"));
    }
    if (!options.num_nodes.emplace(kv.first, count).second) {
      return Usage(absl::StrCat("--num-nodes: '", kv.first, "' is given twice"));
    }
  }
  options.threads = Threads();
  GNND_ASSIGN_OR_RETURN(const std::vector<int32_t> fanouts, HotOrderFanouts());
  GNND_RETURN_IF_ERROR(dataset::Import(absl::GetFlag(FLAGS_format), args[0], args[1], options));
  return Summarize(args[1], fanouts);
}

// --feature-dim as given (0: not given, the preset's width); a width a row can hold, else a usage error.
absl::StatusOr<int64_t> FeatureDimFlag() {
  constexpr int64_t kMaxFeatureDim = 1 << 16;
  const std::optional<int64_t> given = absl::GetFlag(FLAGS_feature_dim);
  if (!given.has_value()) return 0;
  const int64_t dim = *given;
  if (dim < 1 || dim > kMaxFeatureDim) {
    return Usage(absl::StrCat("--feature-dim = ", dim, " (1 to ", kMaxFeatureDim, ")"));
  }
  return dim;
}

absl::Status RunGenerate(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("generate takes OUT_DIR");
  GNND_ASSIGN_OR_RETURN(const int64_t feature_dim, FeatureDimFlag());
  if (dataset::IsTypedPreset(absl::GetFlag(FLAGS_preset))) {
    GNND_ASSIGN_OR_RETURN(dataset::TypedSyntheticSpec spec,
                          dataset::TypedPresetSpec(absl::GetFlag(FLAGS_preset), absl::GetFlag(FLAGS_scale)));
    if (feature_dim > 0) {
      for (auto& type : spec.types) type.feature_dim = type.feature_dim > 0 ? feature_dim : 0;
    }
    dataset::GenerateOptions options;
    options.seed = absl::GetFlag(FLAGS_seed);
    GNND_ASSIGN_OR_RETURN(options.feature_dtype, FeatureDTypeFlag());
    options.threads = Threads();
    options.add_reverse = absl::GetFlag(FLAGS_add_reverse);
    options.link_relation = absl::GetFlag(FLAGS_link_relation);
    for (const std::string& value : absl::GetFlag(FLAGS_edge_attr)) {
      if (!value.empty()) return Usage(absl::StrCat("--edge-attr=", value, ": generate's takes no value"));
    }
    options.edge_attrs = !absl::GetFlag(FLAGS_edge_attr).empty();
    options.temporal = absl::GetFlag(FLAGS_temporal);
    GNND_ASSIGN_OR_RETURN(const std::vector<int32_t> fanouts, HotOrderFanouts());
    GNND_RETURN_IF_ERROR(dataset::GenerateTyped(spec, options, args[0]));
    return Summarize(args[0], fanouts);
  }
  if (!absl::GetFlag(FLAGS_link_relation).empty()) {
    return Usage("--link-relation: only the typed presets (mag, igbh) take it");
  }
  const std::vector<std::string> edge_attr = absl::GetFlag(FLAGS_edge_attr);
  for (const std::string& value : edge_attr) {
    if (!value.empty()) return Usage(absl::StrCat("--edge-attr=", value, ": generate's takes no value"));
  }
  GNND_ASSIGN_OR_RETURN(dataset::SyntheticSpec spec,
                        dataset::PresetSpec(absl::GetFlag(FLAGS_preset), absl::GetFlag(FLAGS_scale)));
  if (feature_dim > 0) spec.feature_dim = feature_dim;
  dataset::GenerateOptions options;
  options.seed = absl::GetFlag(FLAGS_seed);
  GNND_ASSIGN_OR_RETURN(options.feature_dtype, FeatureDTypeFlag());
  if (options.feature_dtype == v1::FEATURE_DTYPE_UNSPECIFIED) options.feature_dtype = v1::FEATURE_DTYPE_FLOAT32;
  options.threads = Threads();
  options.edge_attrs = !edge_attr.empty();
  options.temporal = absl::GetFlag(FLAGS_temporal);
  GNND_ASSIGN_OR_RETURN(const std::vector<int32_t> fanouts, HotOrderFanouts());
  GNND_RETURN_IF_ERROR(dataset::Generate(spec, options, args[0]));
  return Summarize(args[0], fanouts);
}

absl::Status RunSample(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage("sample takes flags only");
  SampleRequest request;
  request.dataset_dir = absl::GetFlag(FLAGS_dataset);
  if (request.dataset_dir.empty()) return Usage("sample needs --dataset DIR");
  request.split = absl::GetFlag(FLAGS_split);
  request.node_type = absl::GetFlag(FLAGS_node_type);
  request.batch_size = absl::GetFlag(FLAGS_batch_size);
  GNND_ASSIGN_OR_RETURN(request.fanouts, Fanouts());
  request.seed = absl::GetFlag(FLAGS_seed);
  request.epoch = absl::GetFlag(FLAGS_epoch);
  request.step = absl::GetFlag(FLAGS_step);
  request.rank = absl::GetFlag(FLAGS_rank);
  request.world_size = absl::GetFlag(FLAGS_world_size);
  request.shuffle = absl::GetFlag(FLAGS_shuffle);
  request.drop_last = absl::GetFlag(FLAGS_drop_last);
  request.device = absl::GetFlag(FLAGS_device);
  request.edge_split = absl::GetFlag(FLAGS_edge_split);
  request.edge_type = absl::GetFlag(FLAGS_edge_type);
  request.neg_sampling = absl::GetFlag(FLAGS_neg_sampling);
  request.neg_amount = absl::GetFlag(FLAGS_neg_amount);
  request.strict = absl::GetFlag(FLAGS_strict_negatives);
  request.exclude = absl::GetFlag(FLAGS_exclude);
  request.labor = absl::GetFlag(FLAGS_labor);
  request.layer_dependency = absl::GetFlag(FLAGS_layer_dependency);
  request.batch_dependency = absl::GetFlag(FLAGS_batch_dependency);
  request.open_fields = absl::GetFlag(FLAGS_open_fields);
  GNND_ASSIGN_OR_RETURN(std::string summary, SampleToNpz(request, absl::GetFlag(FLAGS_out)));
  absl::PrintF("%s\n", summary);
  return absl::OkStatus();
}

absl::Status RunHotness(const std::vector<std::string>& args) {
  if (!args.empty()) return Usage("hotness takes flags only");
  const std::string dir = absl::GetFlag(FLAGS_dataset);
  if (dir.empty()) return Usage("hotness needs --dataset DIR");
  dataset::HotnessSpec spec;
  GNND_ASSIGN_OR_RETURN(spec.fanouts, Fanouts());
  spec.batch_size = absl::GetFlag(FLAGS_batch_size);
  spec.seed = absl::GetFlag(FLAGS_seed);
  spec.presample_batches = absl::GetFlag(FLAGS_presample_batches);
  spec.threads = Threads();
  GNND_ASSIGN_OR_RETURN(std::string report,
                        dataset::HotnessReport(dir, absl::GetFlag(FLAGS_split), spec, absl::GetFlag(FLAGS_write)));
  absl::PrintF("%s", report);
  return absl::OkStatus();
}

absl::Status RunValidate(const std::vector<std::string>& args) {
  if (args.size() != 1) return Usage("validate takes DIR");
  GNND_ASSIGN_OR_RETURN(DatasetDir dataset, DatasetDir::Open(args[0]));
  GNND_RETURN_IF_ERROR(dataset.Validate(Threads()));
  absl::PrintF("%s: valid. %s\n", args[0], dataset.Summary());
  return absl::OkStatus();
}

absl::Status RunPartition(const std::vector<std::string>& args) {
  if (args.size() != 2) return Usage("partition takes DATASET OUT");
  const dataset::PartitionSpec spec{.parts = absl::GetFlag(FLAGS_parts),
                                    .method = absl::GetFlag(FLAGS_method),
                                    .seed = absl::GetFlag(FLAGS_seed),
                                    .threads = Threads()};
  GNND_ASSIGN_OR_RETURN(const std::string summary, dataset::PartitionDataset(args[0], args[1], spec));
  absl::PrintF("%s", summary);
  return absl::OkStatus();
}

absl::Status RunShm(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "list") {
    for (const ShmDatasetInfo& info : ShmDataset::List()) {
      if (info.state == ShmState::kUnreadable) {
        absl::PrintF("%s\tunreadable\towned by uid %d (this user may not open it)\tinstance %s\n", info.name,
                     info.owner, info.instance);
        continue;
      }
      const char* state = info.state == ShmState::kReady     ? "ready"
                          : info.state == ShmState::kLoading ? "loading"
                                                             : "stale";
      // A set whose loader is gone: kept at a clean stop, or left by a gnnd that died (remove it if unused).
      absl::PrintF("%s\t%s\tloader pid %d%s\towner uid %d\tinstance %s\n", info.name, state, info.loader_pid,
                   info.loader_alive ? "" : " (exited)", info.owner, info.instance);
    }
    return absl::OkStatus();
  }
  if (args.size() == 2 && args[0] == "attach") {
    GNND_ASSIGN_OR_RETURN(std::unique_ptr<ShmDataset> dataset,
                          ShmDataset::Attach(args[1], /*any_owner=*/true, absl::GetFlag(FLAGS_instance)));
    if (!dataset->not_own().empty()) {
      std::fprintf(stderr, "gnnctl: warning: %s (shown as found: its contents may be anyone's and may change)\n",
                   dataset->not_own().c_str());
    }
    absl::PrintF("%s: %s\n", args[1], DescribeDataset(dataset->manifest(), dataset->schema(), dataset->arrays()));
    for (size_t i = 0; i < dataset->schema().arrays.size(); ++i) {
      const ArraySchema& array = dataset->schema().arrays[i];
      uLong crc = crc32_z(0L, Z_NULL, 0);
      crc = crc32_z(crc, static_cast<const Bytef*>(dataset->arrays().data[i]), array.bytes());
      absl::PrintF("%s\t%d bytes\tcrc32 %08x\n", array.name, array.bytes(), crc);
    }
    return absl::OkStatus();
  }
  if (args.size() == 2 && args[0] == "remove") return ShmDataset::Remove(args[1], absl::GetFlag(FLAGS_instance));
  return Usage("shm takes: list | attach NAME | remove NAME");
}

absl::Status RunCommand(const std::string& command, const std::vector<std::string>& args) {
  if (command == "import") return RunImport(args);
  if (command == "generate") return RunGenerate(args);
  if (command == "sample") return RunSample(args);
  if (command == "validate") return RunValidate(args);
  if (command == "partition") return RunPartition(args);
  if (command == "hotness") return RunHotness(args);
  if (command == "shm") return RunShm(args);
  if (IsDaemonCommand(command)) {
    v1::LoadDatasetRequest load;
    load.set_huge_pages(absl::GetFlag(FLAGS_huge_pages));
    load.set_feature_cache(absl::GetFlag(FLAGS_feature_cache));
    load.set_look_ahead(absl::GetFlag(FLAGS_look_ahead));
    return RunDaemonCommand(Address(), command, args, load, absl::GetFlag(FLAGS_watch), absl::GetFlag(FLAGS_wait));
  }
  return Usage(absl::StrCat("unknown command '", command, "'"));
}

}  // namespace
}  // namespace gnnd::gnnctl

int main(int argc, char** argv) {
  // An import or generate ended by Ctrl-C or SIGTERM leaves no OUT.partial-PID behind.
  if (absl::Status watched = gnnd::RemoveWorkOnSignals(); !watched.ok()) {
    std::fprintf(stderr, "gnnctl: %s\n", std::string(watched.message()).c_str());
    return 1;
  }
  // --help lists gnnctl's own flags (the libraries' are under --helpfull).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) { return absl::EndsWith(file, "tools/gnnctl/main.cc"); };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  absl::SetProgramUsageMessage(gnnd::gnnctl::kUsage);
  gnnd::NormalizeFlagNames(argc, argv);
  const std::vector<std::string> edge_attrs = gnnd::TakeRepeatedFlag(argc, argv, "edge_attr");
  const std::vector<std::string> node_times = gnnd::TakeRepeatedFlag(argc, argv, "node_time", /*takes_value=*/true);
  const std::vector<std::string> node_attrs = gnnd::TakeRepeatedFlag(argc, argv, "node_attr", /*takes_value=*/true);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (!edge_attrs.empty()) absl::SetFlag(&FLAGS_edge_attr, edge_attrs);
  if (!node_times.empty()) absl::SetFlag(&FLAGS_node_time, node_times);
  if (!node_attrs.empty()) absl::SetFlag(&FLAGS_node_attr, node_attrs);
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  absl::Status status;
  if (args.empty()) {
    status = gnnd::gnnctl::Usage("no command given");
  } else {
    const std::string command = args.front();
    args.erase(args.begin());
    try {
      status = gnnd::gnnctl::RunCommand(command, args);
    } catch (const std::bad_alloc&) {  // unwound: an import's work directory is gone with its writer
      status = absl::ResourceExhaustedError(absl::StrCat(
          command, ": out of memory (a count or size in the input or the flags may be far larger than meant)"));
    }
  }
  if (!status.ok()) {
    std::fprintf(stderr, "gnnctl: %s\n", std::string(status.message()).c_str());
    return absl::IsInvalidArgument(status) ? 2 : 1;
  }
  return 0;
}
