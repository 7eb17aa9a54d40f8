#include "tools/dataset/import.h"

#include "absl/strings/str_cat.h"

namespace gnnd::dataset {

absl::Status Import(const std::string& format, const std::string& source, const std::string& out_dir,
                    const ImportOptions& options) {
  if (format == "ogb") return ImportOgbCsv(source, out_dir, options);
  if (format == "ogb-bin") return ImportOgbBinary(source, out_dir, options);
  if (format == "graphbolt") return ImportGraphBolt(source, out_dir, options);
  if (format == "edgelist") return ImportEdgeList(source, out_dir, options);
  if (format == "mag240m") return ImportMag240m(source, out_dir, options);
  return absl::InvalidArgumentError(
      absl::StrCat("--format ", format, ": unknown (ogb, ogb-bin, graphbolt, edgelist or mag240m)"));
}

}  // namespace gnnd::dataset
