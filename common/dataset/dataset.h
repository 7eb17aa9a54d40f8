// The dataset directory: what arrays it holds, their dtypes and shapes as the manifest implies them,
// and the validation every reader applies. The same checks run on files (DatasetDir) and on any other
// copy of the arrays (e.g. shared memory) through DatasetArrays.
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
#include "gnnd/v1/dataset.pb.h"

namespace gnnd {

enum class ArrayId : uint8_t { kIndptr, kIndices, kFeatures, kLabels, kTrain, kValid, kTest };
inline constexpr int kNumArrays = 7;
inline constexpr std::array<ArrayId, kNumArrays> kAllArrays = {ArrayId::kIndptr, ArrayId::kIndices, ArrayId::kFeatures,
                                                               ArrayId::kLabels, ArrayId::kTrain,   ArrayId::kValid,
                                                               ArrayId::kTest};
// The node splits; their names (ArrayName) are the split names sessions ask for.
inline constexpr std::array<ArrayId, 3> kSplits = {ArrayId::kTrain, ArrayId::kValid, ArrayId::kTest};
inline constexpr char kDefaultSplit[] = "train";

// "indptr", "indices", ... (the file is NAME.npy).
absl::string_view ArrayName(ArrayId id);
// "train" | "valid" | "test" -> the split's array; anything else is INVALID_ARGUMENT naming the field.
absl::StatusOr<ArrayId> SplitArrayId(absl::string_view split);
// The dtype stored on disk (bfloat16 features are stored as uint16).
DType ArrayDType(const v1::DatasetManifest& m, ArrayId id);
std::vector<int64_t> ArrayShape(const v1::DatasetManifest& m, ArrayId id);
size_t ArrayBytes(const v1::DatasetManifest& m, ArrayId id);
// Bytes per feature row.
size_t FeatureRowBytes(const v1::DatasetManifest& m);

// The manifest's own consistency: version, positive counts, dtypes set, index dtype wide enough.
absl::Status CheckManifest(const v1::DatasetManifest& m);

// Pointers to the seven arrays' element data, wherever they live.
struct DatasetArrays {
  std::array<const void*, kNumArrays> data{};

  const void* operator[](ArrayId id) const { return data[static_cast<int>(id)]; }
  const int64_t* indptr() const { return static_cast<const int64_t*>((*this)[ArrayId::kIndptr]); }
  const int64_t* labels() const { return static_cast<const int64_t*>((*this)[ArrayId::kLabels]); }
};

// Checks every value: indptr starts at 0, never decreases and ends at num_edges; every neighbor id is a
// node id; labels are -1 or a class; split ids are node ids, unique within their split and labeled.
// Returns the first problem (lowest position) naming file, field and value.
absl::Status ValidateArrays(const v1::DatasetManifest& m, const DatasetArrays& arrays, int threads);

// A dataset directory opened read-only: manifest parsed and checked, every .npy header matched against
// it. Call Validate() to check the contents too.
class DatasetDir {
 public:
  static absl::StatusOr<DatasetDir> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const v1::DatasetManifest& manifest() const { return manifest_; }
  const NpyFile& file(ArrayId id) const { return files_[static_cast<int>(id)]; }
  DatasetArrays arrays() const;
  absl::Status Validate(int threads) const { return ValidateArrays(manifest_, arrays(), threads); }
  // A one-paragraph human summary (counts, dtypes, degree stats, sizes).
  std::string Summary() const;

 private:
  DatasetDir() = default;
  std::string dir_;
  v1::DatasetManifest manifest_;
  std::vector<NpyFile> files_;
};

// Describes a dataset's counts and sizes in one paragraph; used by gnnctl and gnnd.
std::string DescribeDataset(const v1::DatasetManifest& m, const DatasetArrays& arrays);

}  // namespace gnnd
