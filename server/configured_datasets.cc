#include "server/configured_datasets.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/message_differencer.h"

namespace gnnd {

ConfiguredDatasets::Outcome ConfiguredDatasets::Apply(
    const google::protobuf::RepeatedPtrField<v1::DatasetConfig>& datasets) {
  Outcome outcome;
  std::set<std::string> named;
  for (const v1::DatasetConfig& d : datasets) named.insert(d.name());
  auto unload = [&](const std::string& name, absl::string_view why) {
    if (const absl::Status s = registry_.Unload(name); !s.ok()) {
      outcome.errors.push_back(absl::StrCat("dataset '", name, "' not ", why, ": ", s.message()));
      return false;
    }
    applied_.erase(name);
    outcome.unloaded.push_back(name);
    return true;
  };
  for (auto it = applied_.begin(); it != applied_.end();) {
    const std::string name = (it++)->first;  // unload() erases the entry
    if (!named.contains(name)) unload(name, "unloaded");
  }
  for (const v1::DatasetConfig& d : datasets) {
    if (auto it = applied_.find(d.name()); it != applied_.end()) {
      if (google::protobuf::util::MessageDifferencer::Equals(it->second, d)) {
        outcome.unchanged.push_back(d.name());
        continue;
      }
      // The old copy serves until the new one is loaded whole; if it cannot be, the old one stays.
      if (const absl::StatusOr<v1::DatasetInfo> info = registry_.Replace(d); !info.ok()) {
        outcome.errors.push_back(absl::StrCat("dataset '", d.name(), "' not replaced by ", d.path(), " (the copy from ",
                                              it->second.path(), " serves on): ", info.status().message()));
        continue;
      }
      it->second = d;
      outcome.loaded.push_back(d.name());
      continue;
    }
    const absl::StatusOr<v1::DatasetInfo> info = registry_.Load(d, nullptr);
    if (!info.ok()) {
      outcome.errors.push_back(
          absl::StrCat("dataset '", d.name(), "' (", d.path(), ") not loaded: ", info.status().message()));
      continue;
    }
    applied_[d.name()] = d;
    outcome.loaded.push_back(d.name());
  }
  return outcome;
}

}  // namespace gnnd
