// The datasets gnnd serves: name -> shared-memory copy, with what clients need to know about each and
// how many sessions use it (a dataset in use cannot be unloaded). One mutex guards the map.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/shm_store.h"
#include "gnnd/v1/service.pb.h"
#include "kernels/cpu/sampler.h"
#if GNND_WITH_CUDA
#include "kernels/cuda/cuda_sampler.h"
#endif

namespace gnnd {

// A loaded dataset, shared by the sessions that use it.
struct LoadedDataset {
  std::string name, path;
  std::unique_ptr<ShmDataset> shm;
  GraphData graph;
  int64_t max_in_degree = 0;
  double load_seconds = 0;
#if GNND_WITH_CUDA
  // The dataset as GPU `device` sees it (registered once, CSC copied or zero-copy), made on first use.
  absl::StatusOr<const cuda::DeviceGraph*> OnDevice(int device, bool csc_in_host_memory);
  std::mutex gpu_mutex;
  std::map<int, std::unique_ptr<cuda::DeviceDataset>> gpu;
#endif
};

class DatasetRegistry {
 public:
  explicit DatasetRegistry(bool keep_segments, int threads) : keep_segments_(keep_segments), threads_(threads) {}
  ~DatasetRegistry();

  using Progress = std::function<void(const std::string& array, uint64_t done, uint64_t total)>;
  // Loads DIR under `name`. A set left in shared memory by an earlier gnnd (keep_segments) is attached
  // instead of copied when its manifest matches. ALREADY_EXISTS if gnnd already serves the name.
  absl::StatusOr<v1::DatasetInfo> Load(const std::string& name, const std::string& path, bool huge_pages,
                                       const Progress& progress);
  // FAILED_PRECONDITION while sessions hold it; NOT_FOUND if unknown.
  absl::Status Unload(const std::string& name);
  absl::StatusOr<v1::DatasetInfo> Describe(const std::string& name) const;
  std::vector<v1::DatasetInfo> List() const;

  // A session's hold on a dataset; released by the returned object's destructor.
  class Lease {
   public:
    Lease(DatasetRegistry* registry, std::shared_ptr<LoadedDataset> dataset)
        : registry_(registry), dataset_(std::move(dataset)) {}
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    const LoadedDataset& dataset() const { return *dataset_; }
    LoadedDataset& dataset_mutable() { return *dataset_; }

   private:
    DatasetRegistry* registry_;
    std::shared_ptr<LoadedDataset> dataset_;
  };
  absl::StatusOr<std::unique_ptr<Lease>> Acquire(const std::string& name);

  // Removes every dataset's segments (unless keep_segments); used at shutdown.
  void UnloadAll();

 private:
  v1::DatasetInfo InfoLocked(const LoadedDataset& d) const;

  const bool keep_segments_;
  const int threads_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<LoadedDataset>> datasets_;
  std::map<std::string, int> leases_;
  std::set<std::string> loading_;
};

}  // namespace gnnd
