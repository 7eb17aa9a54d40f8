// `gnnctl import`: each supported source format into a dataset directory.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "tools/dataset/import_builder.h"

namespace gnnd::dataset {

// format: ogb | ogb-bin | graphbolt | edgelist | mag240m.
absl::Status Import(const std::string& format, const std::string& source, const std::string& out_dir,
                    const ImportOptions& options);

// The largest value of an integer .npy (-1: none), and of an --edge-splits directory's seed edges and
// fixed negatives.
absl::StatusOr<int64_t> LargestId(const std::string& path, const std::string& name);
absl::StatusOr<int64_t> LargestEdgeSplitId(const std::string& dir);

// OGB node-property raw layout: raw/{num-node-list,edge,node-feat,node-label}.csv.gz + split/<scheme>/.
absl::Status ImportOgbCsv(const std::string& source, const std::string& out_dir, const ImportOptions& options);
// OGB's heterogeneous raw layout (raw/num-node-dict.csv.gz, raw/relations/S___R___D/, ...), as ogbn-mag
// ships it, into a typed (format_version 2) dataset; ImportOgbCsv takes it when it finds that layout.
bool IsOgbTypedCsv(const std::string& source);
absl::Status ImportOgbTypedCsv(const std::string& source, const std::string& out_dir, const ImportOptions& options);
// OGB's heterogeneous binary layout: raw/num_nodes_dict.npz, raw/edge_index_dict.npz (arrays H___R___T),
// raw/node_feat_dict.npz (or node_feat.npz) and raw/node-label.npz (arrays by node type), keeping each table's
// dtype; raw/edge_feat_dict.npz (arrays H___R___T) as each relation's edge attribute edge_attr; CSV splits.
// ImportOgbBinary takes it when it finds raw/num_nodes_dict.npz.
bool IsOgbTypedBinary(const std::string& source);
absl::Status ImportOgbTypedBinary(const std::string& source, const std::string& out_dir, const ImportOptions& options);
// The split/<scheme> folder of an OGB source: the named one, or the only one present.
absl::StatusOr<std::string> OgbSplitDir(const std::string& source, const std::string& scheme);
// An OGB edge-feature table: `name` (a csv.gz under source, one row of numbers per edge) converted to float32,
// or an npz member copied as it is, at `scratch`, for ImportBuilder::AddEdgeAttribute. False when the table is
// absent (no such file; a member OGB saved as None); an error when its rows are not `edges` (those of the
// file `edges_from`).
absl::StatusOr<bool> ConvertOgbEdgeFeatureCsv(const std::string& source, const std::string& name, int64_t edges,
                                              const std::string& edges_from, const std::string& scratch);
absl::StatusOr<bool> CopyOgbEdgeFeatureNpz(const std::string& npz, const std::string& member, const std::string& what,
                                           int64_t edges, const std::string& scratch);
// OGB binary: raw/data.npz + raw/node-label.npz + split/<scheme>/*.csv.gz.
absl::Status ImportOgbBinary(const std::string& source, const std::string& out_dir, const ImportOptions& options);
// A GraphBolt OnDiskDataset directory (metadata.yaml), homogeneous graph, node feature "feat".
absl::Status ImportGraphBolt(const std::string& source, const std::string& out_dir, const ImportOptions& options);
// OGB-LSC MAG240M's processed layout of .npy arrays (import_mag240m.cc), a typed dataset.
absl::Status ImportMag240m(const std::string& source, const std::string& out_dir, const ImportOptions& options);
// Whitespace-separated "src dst" lines ('#' comments), plain or gzip, plus the optional --features, --labels
// with --splits, --edge-splits; the node count from the features, --num-nodes or the largest id + 1.
absl::Status ImportEdgeList(const std::string& source, const std::string& out_dir, const ImportOptions& options);

}  // namespace gnnd::dataset
