// The datasets the config names, kept in step with the registry: loaded at start, and on a reload
// (SIGHUP) new names are loaded, names gone from the config are unloaded, names whose path changed are
// replaced (the new copy loaded beside the old one, swapped in only when whole: a bad path costs nothing
// that serves), and the others are left alone with their sessions. Datasets loaded by RPC (gnnctl load) are
// not the config's and are never touched here.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gnnd/v1/config.pb.h"
#include "server/dataset_registry.h"

namespace gnnd {

class ConfiguredDatasets {
 public:
  explicit ConfiguredDatasets(DatasetRegistry& registry) : registry_(registry) {}

  struct Outcome {
    std::vector<std::string> loaded, unloaded, unchanged;
    std::vector<std::string> errors;  // one line per dataset that could not be brought in step
  };
  // Brings the registry in step with `datasets`. A dataset still used by sessions is not unloaded or
  // replaced (an error line says so; the next reload tries again).
  Outcome Apply(const google::protobuf::RepeatedPtrField<v1::DatasetConfig>& datasets);

 private:
  DatasetRegistry& registry_;
  std::map<std::string, v1::DatasetConfig> applied_;  // name -> what the config said when it was loaded
};

}  // namespace gnnd
