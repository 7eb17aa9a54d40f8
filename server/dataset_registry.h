// The datasets gnnd serves: name -> shared-memory copy, with what clients need to know about each and
// how many sessions use it (a dataset in use cannot be unloaded). One mutex guards the map.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/vocabulary.h"
#include "common/dataset/graph.h"
#include "common/dataset/row_cache.h"
#include "common/dataset/shm_store.h"
#include "gnnd/v1/config.pb.h"
#include "gnnd/v1/service.pb.h"
#include "server/peers/part_rows.h"
#include "server/peers/peer_network.h"

namespace gnnd {

// A loaded dataset, shared by the sessions that use it.
struct LoadedDataset {
  std::string name, path;
  std::string shm_set;  // its segments' set in /dev/shm: the name, or the staged set's if it could not be published
  std::unique_ptr<ShmDataset> shm;
  // Features on storage (config feature_cache): a cache per node type (null for a type without features),
  // and the batches sessions sample ahead. Empty: the features are in `shm` with the rest.
  std::vector<std::unique_ptr<RowCache>> feature_caches;
  int look_ahead = 0;

  // A part of a partitioned dataset: the other parts' nodes, and each node type's rows (null for a type
  // without features) from this part's memory and theirs.
  std::shared_ptr<PeerNetwork> peers;
  std::vector<std::unique_ptr<PartRows>> part_rows;

  bool features_on_storage() const { return !feature_caches.empty(); }
  // Sessions read feature rows through tiers, in two stages (on storage, or a part's).
  bool features_staged() const { return features_on_storage() || !part_rows.empty(); }
  // The tiers as samplers take them, per node type.
  std::vector<RowTier*> caches() const;
  GraphData graph;
  GraphSummary summary;  // what an open reads of the arrays, found once here (no open makes a pass over them)
  double load_seconds = 0;
};

class DatasetRegistry {
 public:
  // `before_unmap` runs before a dataset's memory goes away (to drop what was derived from it, such as
  // GPU registrations); it may be empty.
  // `after_load` runs once a dataset is loaded, before Load returns (to prepare it for GPUs).
  using BeforeUnmap = std::function<void(const LoadedDataset&)>;
  using AfterLoad = std::function<void(const LoadedDataset&)>;
  // Segments take `instance`'s names (common/base/vocabulary.h).
  DatasetRegistry(bool keep_segments, int threads, BeforeUnmap before_unmap = nullptr, AfterLoad after_load = nullptr,
                  std::string instance = kDefaultInstance)
      : keep_segments_(keep_segments),
        threads_(threads),
        before_unmap_(std::move(before_unmap)),
        after_load_(std::move(after_load)),
        instance_(std::move(instance)) {}
  ~DatasetRegistry();

  using Progress = std::function<void(const std::string& array, uint64_t done, uint64_t total)>;
  // Loads dataset.path under dataset.name (held as `dataset` says: huge pages, features on storage). A set of this
  // instance that an earlier gnnd left in shared memory is attached instead of copied when keep_segments is set and its
  // manifest matches; otherwise it is removed and the dataset loaded afresh (one gnnd runs per instance: InstanceLock).
  // ALREADY_EXISTS if gnnd already serves the name.
  absl::StatusOr<v1::DatasetInfo> Load(const v1::DatasetConfig& dataset, const Progress& progress);
  // Serves dataset.name as `dataset` says instead: the new copy is loaded (and prepared for GPUs) beside the one in
  // use, and swapped in only once it is whole; on any error the old copy stays, serving. FAILED_PRECONDITION while
  // sessions hold the dataset (checked again at the swap); NOT_FOUND if it is not loaded.
  absl::StatusOr<v1::DatasetInfo> Replace(const v1::DatasetConfig& dataset);
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

   private:
    DatasetRegistry* registry_;
    std::shared_ptr<LoadedDataset> dataset_;
  };
  absl::StatusOr<std::unique_ptr<Lease>> Acquire(const std::string& name);

  // Removes every dataset's segments (unless keep_segments); used at shutdown.
  void UnloadAll();
  // How a part of a partitioned dataset finds the nodes serving the other parts (--peers and its flags);
  // without it such a part is refused at load. Set before the first load.
  struct PeerSetup {
    std::vector<std::string> peers;  // HOST:PORT per part
    std::string listen;              // where this part listens, if not its --peers entry
    std::string token;
    absl::Duration timeout = absl::Seconds(10);
    bool shared_memory = false;
    uint64_t remote_cache_bytes = 0;  // kept of the rows fetched, over the node types; 0: none
  };
  void ServePartsWith(PeerSetup setup) { peer_setup_ = std::move(setup); }
  // Makes loads in flight, and every later one, end CANCELLED, leaving nothing behind: gnnd is stopping.
  void CancelLoads() { cancel_loads_.store(true); }

 private:
  std::atomic<bool> cancel_loads_{false};
  v1::DatasetInfo InfoLocked(const LoadedDataset& d) const;
  // A copy of the dataset in shared memory (a staged set with `staging`), prepared by after_load.
  absl::StatusOr<std::shared_ptr<LoadedDataset>> MakeCopy(const v1::DatasetConfig& dataset, bool staging,
                                                          const Progress& progress);
  // Opens each node type's features file of `dir` behind a cache, the feature_cache bytes shared in
  // proportion to the tables' sizes; heat from the dataset's hot_order.npy (else, homogeneous, in-degree).
  static absl::StatusOr<std::vector<std::unique_ptr<RowCache>>> OpenFeatureCaches(const v1::DatasetConfig& dataset,
                                                                                  const DatasetDir& dir,
                                                                                  const GraphData& graph);
  // A part's network and tiers, or FAILED_PRECONDITION naming what it lacks.
  absl::Status ConnectPart(LoadedDataset& loaded) const;
  void Unmap(LoadedDataset& dataset);
  // Unmaps a copy no session uses and removes its segments.
  void Drop(LoadedDataset& dataset);

  const bool keep_segments_;
  const int threads_;
  const BeforeUnmap before_unmap_;
  const AfterLoad after_load_;
  const std::string instance_;
  PeerSetup peer_setup_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<LoadedDataset>> datasets_;
  std::map<std::string, int> leases_;
  std::set<std::string> loading_;
};

}  // namespace gnnd
