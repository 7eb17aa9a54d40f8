// The dataset directory: what arrays it holds (its schema, common/dataset/schema.h), and the validation
// every reader applies. The same checks run on files (DatasetDir) and on any other copy of the arrays
// (e.g. shared memory) through DatasetArrays.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/base/dtype.h"
#include "common/dataset/npy.h"
#include "common/dataset/schema.h"
#include "gnnd/v1/dataset.pb.h"

namespace gnnd {

// The arrays of a one-type, one-relation (homogeneous) dataset by role: what the samplers read today.
enum class ArrayId : uint8_t { kIndptr, kIndices, kFeatures, kLabels, kTrain, kValid, kTest };
inline constexpr int kNumArrays = 7;
inline constexpr std::array<ArrayId, kNumArrays> kAllArrays = {ArrayId::kIndptr, ArrayId::kIndices, ArrayId::kFeatures,
                                                               ArrayId::kLabels, ArrayId::kTrain,   ArrayId::kValid,
                                                               ArrayId::kTest};
// The node splits; their names (ArrayName) are the split names sessions ask for.
inline constexpr std::array<ArrayId, 3> kSplits = {ArrayId::kTrain, ArrayId::kValid, ArrayId::kTest};
inline constexpr char kDefaultSplit[] = "train";

// "indptr", "indices", ... (a format_version 1 dataset's files are NAME.npy).
absl::string_view ArrayName(ArrayId id);
// "train" | "valid" | "test" -> the split's array; anything else is INVALID_ARGUMENT naming the field.
absl::StatusOr<ArrayId> SplitArrayId(absl::string_view split);
// For a format_version 1 manifest (what the homogeneous samplers serve): the dtype stored on disk
// (bfloat16 features are stored as uint16), shapes and sizes of the seven arrays.
DType ArrayDType(const v1::DatasetManifest& m, ArrayId id);
std::vector<int64_t> ArrayShape(const v1::DatasetManifest& m, ArrayId id);
size_t ArrayBytes(const v1::DatasetManifest& m, ArrayId id);
// Bytes per feature row.
size_t FeatureRowBytes(const v1::DatasetManifest& m);

// The manifest's own consistency (DatasetSchema::FromManifest).
absl::Status CheckManifest(const v1::DatasetManifest& m);

// Pointers to a dataset's arrays' element data, wherever they live: one per schema array, in its order.
struct DatasetArrays {
  std::vector<const void*> data;
  // The position of each homogeneous role in `data`, -1 where the dataset has none (a typed dataset).
  std::array<int, kNumArrays> positions;

  DatasetArrays() { positions.fill(-1); }
  // Sized for `schema`, every pointer null.
  explicit DatasetArrays(const DatasetSchema& schema);

  const void* operator[](ArrayId id) const {
    const int at = positions[static_cast<int>(id)];
    return at < 0 ? nullptr : data[at];
  }
  const int64_t* indptr() const { return static_cast<const int64_t*>((*this)[ArrayId::kIndptr]); }
  const int64_t* labels() const { return static_cast<const int64_t*>((*this)[ArrayId::kLabels]); }
};

// Checks every value, relation by relation and type by type: indptr starts at 0, never decreases and
// ends at num_edges; every neighbor id is a node of the relation's source type; labels are -1 or a class;
// split ids are nodes of their type, unique within their split and labeled. Returns the first problem
// (lowest position) naming file, field and value.
absl::Status ValidateArrays(const DatasetSchema& schema, const DatasetArrays& arrays, int threads);

// A dataset directory opened read-only: manifest parsed and checked, every .npy header matched against
// it. Call Validate() to check the contents too.
class DatasetDir {
 public:
  static absl::StatusOr<DatasetDir> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const v1::DatasetManifest& manifest() const { return manifest_; }
  const DatasetSchema& schema() const { return schema_; }
  // The file of schema array `position`, or of a homogeneous role (a format_version 1 dataset).
  const NpyFile& file(size_t position) const { return files_[position]; }
  const NpyFile& file(ArrayId id) const { return files_[arrays().positions[static_cast<int>(id)]]; }
  DatasetArrays arrays() const;
  absl::Status Validate(int threads) const { return ValidateArrays(schema_, arrays(), threads); }
  // A one-paragraph human summary (counts, dtypes, degree stats, sizes).
  std::string Summary() const;

 private:
  DatasetDir() = default;
  std::string dir_;
  v1::DatasetManifest manifest_;
  DatasetSchema schema_;
  std::vector<NpyFile> files_;
};

// OK for a whole dataset; FAILED_PRECONDITION naming `what` for a part of a partitioned one (gnnctl partition):
// a part holds only its own feature rows (gnnd serves one with its peers: server/peers/).
absl::Status RequireWhole(const DatasetSchema& schema, absl::string_view what);

// Describes a dataset's counts and sizes in one paragraph; used by gnnctl and gnnd.
std::string DescribeDataset(const v1::DatasetManifest& m, const DatasetSchema& schema, const DatasetArrays& arrays);

}  // namespace gnnd
