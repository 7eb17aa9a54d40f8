// Fuzzes the session request validator with whatever bytes a peer may send as an OpenSession message,
// against two fixed dataset shapes (ogbn-products, homogeneous; ogbn-mag, typed, with node times and a timed
// edge split for temporal sessions); an accepted request's slots must fit the limits it was checked against.
#include <cstdint>
#include <cstdlib>

#include "common/wire/open_request.h"
#include "google/protobuf/text_format.h"

namespace {

gnnd::GraphData Graph(const char* manifest_text) {
  gnnd::GraphData graph;
  if (!google::protobuf::TextFormat::ParseFromString(manifest_text, &graph.manifest)) std::abort();
  auto schema = gnnd::DatasetSchema::FromManifest(graph.manifest);
  if (!schema.ok()) std::abort();
  graph.schema = *std::move(schema);
  graph.arrays = gnnd::DatasetArrays(graph.schema);  // the validator reads no array
  return graph;
}

constexpr char kProducts[] = R"pb(
  format_version: 1
  num_nodes: 2449029
  num_edges: 61859140
  index_dtype: INDEX_DTYPE_INT32
  feature_dim: 100
  feature_dtype: FEATURE_DTYPE_FLOAT32
  num_classes: 47
  num_train: 196615
  num_valid: 39323
  num_test: 2213091
)pb";
constexpr char kMag[] = R"pb(
  format_version: 2
  node_types { name: "author" num_nodes: 1134649 node_time: true }
  node_types { name: "field_of_study" num_nodes: 59965 }
  node_types { name: "institution" num_nodes: 8740 }
  node_types {
    name: "paper"
    num_nodes: 736389
    feature_dim: 128
    feature_dtype: FEATURE_DTYPE_FLOAT32
    num_classes: 349
    num_train: 629571
    num_valid: 64879
    num_test: 41939
    node_time: true
  }
  relations {
    src_type: "author"
    name: "affiliated_with"
    dst_type: "institution"
    num_edges: 1043998
    index_dtype: INDEX_DTYPE_INT32
  }
  relations {
    src_type: "author"
    name: "writes"
    dst_type: "paper"
    num_edges: 7145660
    index_dtype: INDEX_DTYPE_INT32
    edge_splits { name: "valid" num_edges: 1000 timed: true }
  }
  relations { src_type: "paper" name: "cites" dst_type: "paper" num_edges: 5416271 index_dtype: INDEX_DTYPE_INT32 }
  relations {
    src_type: "paper"
    name: "has_topic"
    dst_type: "field_of_study"
    num_edges: 7505078
    index_dtype: INDEX_DTYPE_INT32
  }
)pb";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const gnnd::GraphData* products = new gnnd::GraphData(Graph(kProducts));
  static const gnnd::GraphData* mag = new gnnd::GraphData(Graph(kMag));
  gnnd::v1::OpenSession request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  const gnnd::SlotLimits limits;
  for (const auto& [graph, degrees] : {std::pair{products, std::vector<int64_t>{7'626}},
                                       std::pair{mag, std::vector<int64_t>{27, 4'877, 4'744, 43'200}}}) {
    auto shape = gnnd::CheckOpenRequest(request, *graph, {degrees}, limits);
    // (Slots that may grow are held to the limit once sized, by the session.)
    if (shape.ok() &&
        ((shape->slot_bytes > limits.max_session_bytes && !request.slots_may_grow()) || shape->num_slots < 1 ||
         shape->schema.slot_bytes == 0 || shape->layout.homogeneous != (graph == products) ||
         shape->layout.total_bytes != shape->schema.slot_bytes)) {
      std::abort();  // an accepted request must be one the daemon can hold
    }
  }
  return 0;
}
