#include "tools/dataset/times.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/status.h"
#include "common/dataset/npy.h"
#include "common/dataset/schema.h"
#include "tools/dataset/import_builder.h"
#include "tools/dataset/input.h"

namespace gnnd::dataset {

absl::StatusOr<NodeTimeInput> ParseNodeTimeFlag(absl::string_view flag) {
  NodeTimeInput input;
  const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(flag, absl::MaxSplits('=', 1));
  if (kv.second.empty()) {
    input.path = std::string(kv.first);
  } else {
    if (!IsSchemaName(kv.first)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--node-time: '", kv.first, "' is not a node type name (letters, digits and _)"));
    }
    input.type = std::string(kv.first);
    input.path = std::string(kv.second);
  }
  if (input.path.empty()) return absl::InvalidArgumentError("--node-time: needs FILE.npy or TYPE=FILE.npy");
  return input;
}

absl::Status WriteTimes(const std::string& out_path, const std::string& path, int64_t count,
                        absl::string_view count_name) {
  GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpyStream(path, path));
  const NpyHeader& h = reader.header();
  const bool column = h.shape.size() == 2 && h.shape[1] == 1;
  if (!(h.shape.size() == 1 || column) || h.shape[0] != count) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": times of shape ", ShapeText(h.shape), ", expected (",
                                                   count_name, " = ", count, ") or (", count, ", 1)"));
  }
  if (IsFloat(h.dtype) || h.dtype == DType::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": times of dtype ", DTypeName(h.dtype), ", expected integers (e.g. int64)"));
  }
  GNND_ASSIGN_OR_RETURN(NpyWriter out, NpyWriter::CreateMapped(out_path, DType::kInt64, {count}));
  auto* times = out.mutable_as<int64_t>();
  constexpr int64_t kBlock = 1 << 20;
  for (int64_t start = 0; start < count; start += kBlock) {
    GNND_RETURN_IF_ERROR(reader.ReadInt64(times + start, std::min(kBlock, count - start)));
  }
  return out.Finish();
}

absl::Status WriteIdTimes(const std::string& out_path, int64_t count) {
  GNND_ASSIGN_OR_RETURN(NpyWriter out, NpyWriter::CreateMapped(out_path, DType::kInt64, {count}));
  int64_t* time = out.mutable_as<int64_t>();
  for (int64_t v = 0; v < count; ++v) time[v] = v;
  return out.Finish();
}

absl::Status WriteSplitTimes(const std::string& out_path, const std::string& dir, absl::string_view split,
                             int64_t count) {
  const std::string path = absl::StrCat(dir, "/", split, ".npy");
  if (Exists(path)) return WriteTimes(out_path, path, count, absl::StrCat(split, "'s seeds"));
  if (count > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": no ", split, ".npy for the ", count, " seeds of split ", split, " (one time each)"));
  }
  GNND_ASSIGN_OR_RETURN(NpyWriter empty, NpyWriter::CreateMapped(out_path, DType::kInt64, {0}));
  return empty.Finish();
}

}  // namespace gnnd::dataset
