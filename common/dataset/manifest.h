// The dataset manifest (proto/gnnd/v1/dataset.proto) in protobuf text format.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "gnnd/v1/dataset.pb.h"

namespace gnnd {

inline constexpr char kManifestFile[] = "manifest.textproto";
// What the importers write for a homogeneous dataset; typed datasets are format_version 2.
inline constexpr uint32_t kDatasetFormatVersion = 1;

// Parses text; `what` names the source in errors, which give line and column.
absl::StatusOr<v1::DatasetManifest> ParseManifest(const std::string& text, const std::string& what);
// Reads and parses an open manifest file of at most kMaxManifestBytes.
inline constexpr size_t kMaxManifestBytes = 1 << 20;
absl::StatusOr<v1::DatasetManifest> ReadManifest(int fd);
// Writes DIR/manifest.textproto (via a temporary file and rename, then fsync).
absl::Status WriteManifest(const std::string& dir, const v1::DatasetManifest& manifest);
std::string ManifestToText(const v1::DatasetManifest& manifest);

}  // namespace gnnd
