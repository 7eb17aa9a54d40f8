#include "tools/dataset/edge_attrs.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"
#include "common/dataset/npy.h"
#include "common/dataset/schema.h"
#include "tools/dataset/import_builder.h"

namespace gnnd::dataset {
namespace {

// The dtype an input dtype is stored as, or nullopt.
std::optional<DType> StoredAs(DType in) {
  switch (in) {
    case DType::kFloat64:
    case DType::kFloat32:
      return DType::kFloat32;
    case DType::kFloat16:
      return DType::kFloat16;
    case DType::kBool:
      return DType::kBool;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kInt64:
    case DType::kUInt64:
      return DType::kInt64;
    default:
      return std::nullopt;
  }
}

// One integer element as int64, or an error naming it (a uint64 past int64's range).
absl::StatusOr<int64_t> IntegerAt(DType dtype, const std::byte* p, absl::string_view file, int64_t element) {
  auto load = [p]<typename T>(T) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  };
  switch (dtype) {
    case DType::kBool:
    case DType::kUInt8:
      return load(uint8_t{});
    case DType::kInt8:
      return load(int8_t{});
    case DType::kInt16:
      return load(int16_t{});
    case DType::kUInt16:
      return load(uint16_t{});
    case DType::kInt32:
      return load(int32_t{});
    case DType::kUInt32:
      return load(uint32_t{});
    case DType::kInt64:
      return load(int64_t{});
    default: {
      const uint64_t v = load(uint64_t{});
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return absl::InvalidArgumentError(absl::StrCat(file, ": element ", element, " = ", v, " is past int64"));
      }
      return static_cast<int64_t>(v);
    }
  }
}

}  // namespace

absl::Status CheckEdgeAttributeName(absl::string_view name) {
  if (!IsSchemaName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(name, 100), ": names are letters, digits and _ (1 to 64, no ___)"));
  }
  if (IsBatchArrayName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(name), ": the name of a batch's array (batches carry attributes by name)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<EdgeAttributeInput> ParseEdgeAttributeFlag(absl::string_view flag) {
  const size_t eq = flag.find('=');
  if (eq == absl::string_view::npos || eq + 1 == flag.size()) {
    return absl::InvalidArgumentError(absl::StrCat("--edge-attr ", Quoted(flag, 100), ": expected NAME=FILE.npy"));
  }
  EdgeAttributeInput input{std::string(flag.substr(0, eq)), std::string(flag.substr(eq + 1))};
  if (absl::Status named = CheckEdgeAttributeName(input.name); !named.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--edge-attr ", named.message()));
  }
  return input;
}

namespace {
// Writes `out_path` from `input` (num_input_rows rows, one a `row_kind`: "edge" or "node"), its rows in the
// order of `ids` (positions among the input rows; empty: the input's order). Returns its manifest entry.
absl::StatusOr<v1::EdgeAttribute> WriteAttribute(const std::string& out_path, const EdgeAttributeInput& input,
                                                 int64_t num_input_rows, std::span<const int64_t> ids,
                                                 absl::string_view row_kind) {
  const std::string one = row_kind == "edge" ? "an edge" : "a node";
  GNND_ASSIGN_OR_RETURN(const NpyFile in, NpyFile::Open(input.path));
  const NpyHeader& h = in.header();
  if (h.shape.empty() || h.shape.size() > 2) {
    return absl::InvalidArgumentError(absl::StrCat(input.path, ": shape ", ShapeText(h.shape), ", expected (num_",
                                                   row_kind, "s,) or (num_", row_kind, "s, dim)"));
  }
  if (h.shape[0] != num_input_rows) {
    return absl::InvalidArgumentError(absl::StrCat(input.path, ": ", h.shape[0], " rows, but the ", row_kind, "s are ",
                                                   num_input_rows, " (one row ", one, ", in their order)"));
  }
  if (h.shape.size() == 2 && h.shape[1] < 1) {  // (E, 0) holds nothing: it is not an (E,) attribute
    return absl::InvalidArgumentError(
        absl::StrCat(input.path, ": shape ", ShapeText(h.shape), ", an attribute needs at least one value ", one));
  }
  const int64_t dim = h.shape.size() == 2 ? h.shape[1] : 0;
  const int64_t width = std::max<int64_t>(dim, 1);
  if (h.fortran_order && width > 1) {
    return absl::InvalidArgumentError(absl::StrCat(input.path, ": Fortran order (save it in C order)"));
  }
  const std::optional<DType> stored = StoredAs(h.dtype);
  if (!stored) {
    return absl::InvalidArgumentError(
        absl::StrCat(input.path, ": dtype ", DTypeName(h.dtype), " (expected a float or integer array)"));
  }
  const int64_t rows = ids.empty() ? num_input_rows : static_cast<int64_t>(ids.size());
  std::vector<int64_t> shape = {rows};
  if (dim > 0) shape.push_back(dim);
  GNND_ASSIGN_OR_RETURN(NpyWriter out, NpyWriter::CreateMapped(out_path, *stored, shape));
  const size_t in_row = DTypeSize(h.dtype) * static_cast<size_t>(width);
  const size_t out_row = DTypeSize(*stored) * static_cast<size_t>(width);
  const auto* from = static_cast<const std::byte*>(in.data());
  auto* to = static_cast<char*>(out.mutable_data());
  std::vector<double> values(h.dtype == DType::kFloat64 ? width : 0);  // a float64 row, aligned for reading
  for (int64_t k = 0; k < rows; ++k) {
    const int64_t row = ids.empty() ? k : ids[k];
    const std::byte* src = from + row * in_row;
    char* dst = to + k * out_row;
    const FeatureBlock block{.where = input.path, .first = row * width, .dim = width, .attribute = row_kind};
    if (h.dtype == DType::kFloat64) {
      std::memcpy(values.data(), src, in_row);
      GNND_RETURN_IF_ERROR(EncodeFeaturesAs(DType::kFloat32, values.data(), width, dst, block, /*clamp=*/false));
    } else if (IsFloat(h.dtype)) {
      std::memcpy(dst, src, in_row);
      GNND_RETURN_IF_ERROR(CheckFeatureBits(h.dtype, dst, width, block));
    } else if (h.dtype == DType::kBool) {  // one byte each, 0 or 1 (a reader takes any other byte as undefined)
      std::memcpy(dst, src, in_row);
      for (int64_t j = 0; j < width; ++j) {
        if (static_cast<uint8_t>(dst[j]) > 1) {
          return absl::InvalidArgumentError(absl::StrCat(input.path, ": element ", row * width + j, " = ",
                                                         static_cast<int>(static_cast<uint8_t>(dst[j])),
                                                         " is not a bool (0 or 1)"));
        }
      }
    } else {
      for (int64_t j = 0; j < width; ++j) {
        GNND_ASSIGN_OR_RETURN(const int64_t v,
                              IntegerAt(h.dtype, src + j * DTypeSize(h.dtype), input.path, row * width + j));
        std::memcpy(dst + j * sizeof(int64_t), &v, sizeof(int64_t));
      }
    }
  }
  GNND_RETURN_IF_ERROR(out.Finish());
  v1::EdgeAttribute entry;
  entry.set_name(input.name);
  entry.set_dim(dim);
  entry.set_dtype(*stored == DType::kInt64     ? v1::FEATURE_DTYPE_INT64
                  : *stored == DType::kBool    ? v1::FEATURE_DTYPE_BOOL
                  : *stored == DType::kFloat16 ? v1::FEATURE_DTYPE_FLOAT16
                                               : v1::FEATURE_DTYPE_FLOAT32);
  return entry;
}

}  // namespace

absl::StatusOr<v1::EdgeAttribute> WriteEdgeAttribute(const std::string& dir, const std::string& prefix,
                                                     const EdgeAttributeInput& input, int64_t num_input_edges,
                                                     std::span<const int64_t> ids) {
  return WriteAttribute(absl::StrCat(dir, "/", prefix, "edge.", input.name, ".npy"), input, num_input_edges, ids,
                        "edge");
}

absl::StatusOr<v1::EdgeAttribute> WriteNodeAttribute(const std::string& dir, const std::string& prefix,
                                                     const EdgeAttributeInput& input, int64_t num_nodes) {
  return WriteAttribute(absl::StrCat(dir, "/", prefix, "node.", input.name, ".npy"), input, num_nodes, {}, "node");
}

absl::StatusOr<NodeAttributeInput> ParseNodeAttributeFlag(absl::string_view flag) {
  const size_t eq = flag.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq + 1 == flag.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-attr ", Quoted(flag, 100), ": expected NAME=FILE.npy or TYPE.NAME=FILE.npy"));
  }
  const absl::string_view key = flag.substr(0, eq);
  const size_t dot = key.find('.');
  NodeAttributeInput input;
  input.type = dot == absl::string_view::npos ? "" : std::string(key.substr(0, dot));
  input.attr = {std::string(dot == absl::string_view::npos ? key : key.substr(dot + 1)),
                std::string(flag.substr(eq + 1))};
  if (!input.type.empty() && !IsSchemaName(input.type)) {
    return absl::InvalidArgumentError(absl::StrCat("--node-attr ", Quoted(input.type, 100),
                                                   ": a node type's name (letters, digits and _, 1 to 64, no ___)"));
  }
  if (absl::Status named = CheckEdgeAttributeName(input.attr.name); !named.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--node-attr ", named.message()));
  }
  return input;
}

}  // namespace gnnd::dataset
