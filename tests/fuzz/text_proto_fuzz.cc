// Fuzzes the text-format readers of outside files: the dataset manifest (then its consistency check) and
// the daemon config (then its field checks).
#include <cstdint>
#include <string>

#include "common/base/text_proto.h"
#include "common/dataset/dataset.h"
#include "common/dataset/manifest.h"
#include "server/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto manifest = gnnd::ParseManifest(text, "manifest.textproto"); manifest.ok()) {
    if (gnnd::CheckManifest(*manifest).ok()) {
      for (gnnd::ArrayId id : gnnd::kAllArrays) (void)gnnd::ArrayBytes(*manifest, id);
    }
  }
  gnnd::v1::DaemonConfig config;
  if (gnnd::ParseTextProto(text, "gnnd.textproto", &config).ok()) (void)gnnd::FinishDaemonConfig(config);
  return 0;
}
