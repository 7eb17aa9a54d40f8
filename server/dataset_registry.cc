#include "server/dataset_registry.h"

#include <algorithm>
#include <chrono>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/log.h"
#include "common/base/status.h"
#include "common/dataset/hot_order.h"
#include "server/config.h"

namespace gnnd {

DatasetRegistry::~DatasetRegistry() = default;

void DatasetRegistry::Unmap(LoadedDataset& dataset) {
  if (before_unmap_) before_unmap_(dataset);
  dataset.feature_caches.clear();  // their heat may read the graph in `shm`
  dataset.part_rows.clear();       // they, and the network, read its rows
  dataset.peers.reset();
  dataset.shm.reset();
}

DatasetRegistry::Lease::~Lease() {
  std::lock_guard<std::mutex> lock(registry_->mutex_);
  --registry_->leases_[dataset_->name];
}

v1::DatasetInfo DatasetRegistry::InfoLocked(const LoadedDataset& d) const {
  v1::DatasetInfo info;
  info.set_name(d.name);
  info.set_path(d.path);
  *info.mutable_manifest() = d.graph.manifest;
  info.set_max_in_degree(*std::max_element(d.summary.max_in_degrees.begin(), d.summary.max_in_degrees.end()));
  if (const auto leases = leases_.find(d.name); leases != leases_.end()) info.set_sessions(leases->second);
  uint64_t bytes = d.graph.schema.total_bytes();  // what shared memory holds: not features left on storage
  for (size_t t = 0; t < d.feature_caches.size(); ++t) {
    const RowCache* cache = d.feature_caches[t].get();
    if (cache == nullptr) continue;
    bytes -= d.graph.schema.arrays[d.graph.schema.node_types[t].features].bytes();
    const RowCacheStats c = cache->stats();
    v1::FeatureCacheStats& out = *info.add_feature_caches();
    out.set_path(cache->table().path);
    if (!d.graph.schema.homogeneous()) out.set_node_type(d.graph.schema.node_types[t].name);
    out.set_capacity_bytes(cache->memory().size());
    out.set_capacity_rows(c.capacity_rows);
    out.set_resident_rows(c.resident_rows);
    out.set_hits(c.hits);
    out.set_misses(c.misses);
    out.set_prefetched(c.prefetched);
    out.set_bypassed(c.bypassed);
    out.set_gpu_tier_rows(c.held_elsewhere);
    out.set_warmed(c.warmed);
    out.set_evictions(c.evictions);
    out.set_reads(c.reads);
    out.set_bytes_read(c.bytes_read);
    out.set_read_seconds(c.read_seconds);
    out.set_window(c.window);
    out.set_look_ahead(d.look_ahead);
    out.set_queue_depth(c.queue_depth);
    out.set_direct(c.direct);
  }
  if (d.peers != nullptr) {
    const PartitionSchema& partition = d.graph.schema.partition;
    v1::PartitionStats& out = *info.mutable_partition();
    out.set_dataset_id(partition.dataset_id);
    out.set_part(partition.part);
    out.set_num_parts(partition.num_parts);
    for (const PeerStats& peer : d.peers->stats()) {
      v1::PeerStats& p = *out.add_peers();
      p.set_part(peer.part);
      p.set_address(peer.address);
      p.set_state(peer.state);
      p.set_error(peer.error);
      p.set_rows(peer.rows);
      p.set_bytes(peer.bytes);
      p.set_fetches(peer.fetches);
      p.set_failures(peer.failures);
      p.set_connects(peer.connects);
      p.set_fetch_seconds(peer.fetch_seconds);
    }
    const ServedStats served = d.peers->served();
    out.set_requests_served(served.requests);
    out.set_rows_served(served.rows);
    out.set_bytes_served(served.bytes);
    out.set_peers_refused(served.refused);
    for (const auto& rows : d.part_rows) {
      if (rows == nullptr) continue;
      const PartRowsStats stats = rows->stats();
      out.set_local_rows(out.local_rows() + stats.local_rows);
      out.set_remote_rows(out.remote_rows() + stats.remote_rows);
      out.set_wait_seconds(out.wait_seconds() + stats.wait_seconds);
      out.set_cached_rows(out.cached_rows() + stats.cached_rows);
      out.set_remote_cache_capacity_rows(out.remote_cache_capacity_rows() + stats.cache.capacity_rows);
      out.set_remote_cache_resident_rows(out.remote_cache_resident_rows() + stats.cache.resident_rows);
      out.set_remote_cache_evictions(out.remote_cache_evictions() + stats.cache.evictions);
    }
  }
  info.set_bytes(bytes);
  info.set_time_order_bytes(d.graph.time_orders->bytes());
  return info;
}

absl::StatusOr<v1::DatasetInfo> DatasetRegistry::Load(const v1::DatasetConfig& dataset, const Progress& progress) {
  const std::string& name = dataset.name();
  GNND_RETURN_IF_ERROR(ShmDataset::CheckName(name));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (datasets_.contains(name) || loading_.contains(name)) {
      return absl::AlreadyExistsError(absl::StrCat("dataset ", Quoted(name), " is already loaded (or loading)"));
    }
    loading_.insert(name);
  }
  absl::Cleanup done_loading = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    loading_.erase(name);
  };
  GNND_ASSIGN_OR_RETURN(std::shared_ptr<LoadedDataset> loaded, MakeCopy(dataset, /*staging=*/false, progress));
  std::lock_guard<std::mutex> lock(mutex_);
  datasets_[name] = loaded;
  return InfoLocked(*loaded);
}

absl::StatusOr<v1::DatasetInfo> DatasetRegistry::Replace(const v1::DatasetConfig& dataset) {
  const std::string& name = dataset.name();
  auto in_use = [&] {
    return absl::FailedPreconditionError(
        absl::StrCat("dataset ", Quoted(name), " is used by ", leases_[name], " session(s); close them first"));
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!datasets_.contains(name)) return absl::NotFoundError(absl::StrCat("dataset ", Quoted(name), " is not loaded"));
    if (loading_.contains(name)) return absl::AlreadyExistsError(absl::StrCat("dataset ", Quoted(name), " is loading"));
    if (leases_[name] > 0) return in_use();
    loading_.insert(name);
  }
  absl::Cleanup done_loading = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    loading_.erase(name);
  };
  // The new copy is made beside the old one, which serves meanwhile; it is swapped in only when whole.
  GNND_ASSIGN_OR_RETURN(std::shared_ptr<LoadedDataset> fresh, MakeCopy(dataset, /*staging=*/true, nullptr));
  std::shared_ptr<LoadedDataset> old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (leases_[name] == 0) old = std::exchange(datasets_[name], fresh);
  }
  if (old == nullptr) {  // a session took the old copy while the new one loaded: it stays
    Drop(*fresh);
    std::lock_guard<std::mutex> lock(mutex_);
    return in_use();
  }
  Drop(*old);
  if (const absl::Status published = fresh->shm->Publish(); !published.ok()) {
    LogWarning("dataset '%s' serves from its staged segments: %s", name, published.message());
  }
  fresh->shm_set = fresh->shm->name();
  LogEvent(LogLevel::kInfo, "dataset_replaced", {{"dataset", name}, {"path", dataset.path()}},
           "dataset '%s' replaced by the copy from %s", name, dataset.path());
  std::lock_guard<std::mutex> lock(mutex_);
  return InfoLocked(*fresh);
}

std::vector<RowTier*> LoadedDataset::caches() const {
  std::vector<RowTier*> out;
  for (const auto& cache : feature_caches) out.push_back(cache.get());
  for (const auto& rows : part_rows) out.push_back(rows.get());
  return out;
}

absl::Status DatasetRegistry::ConnectPart(LoadedDataset& loaded) const {
  const DatasetSchema& schema = loaded.graph.schema;
  PeerOptions options;
  options.peers = peer_setup_.peers;
  options.listen = peer_setup_.listen;
  options.token = peer_setup_.token;
  options.timeout = peer_setup_.timeout;
  options.shared_memory = peer_setup_.shared_memory;
  options.dataset_id = schema.partition.dataset_id;
  options.part = schema.partition.part;
  std::vector<ServedTable> tables;
  for (const NodeTypeSchema& type : schema.node_types) {
    options.part_rows.push_back(type.part_rows);
    ServedTable table;
    if (type.features >= 0) {
      table = {static_cast<const std::byte*>(loaded.graph.arrays.data[type.features]),
               type.part_rows[schema.partition.part], type.feature_row_bytes()};
    }
    tables.push_back(table);
  }
  GNND_ASSIGN_OR_RETURN(std::unique_ptr<PeerNetwork> network, PeerNetwork::Start(options, std::move(tables)));
  loaded.peers = std::move(network);
  // The remote cache's bytes go to the node types by the bytes of rows they own elsewhere.
  const uint32_t part = schema.partition.part;
  const auto elsewhere_bytes = [&](const NodeTypeSchema& type) {
    return type.features < 0 ? 0.0
                             : static_cast<double>(type.num_nodes - type.part_rows[part]) * type.feature_row_bytes();
  };
  double all_elsewhere_bytes = 0;
  for (const NodeTypeSchema& type : schema.node_types) all_elsewhere_bytes += elsewhere_bytes(type);
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const NodeTypeSchema& type = schema.node_types[t];
    if (type.features < 0) {
      loaded.part_rows.push_back(nullptr);
      continue;
    }
    std::unique_ptr<RemoteRowCache> cache;
    const double share = all_elsewhere_bytes > 0 ? elsewhere_bytes(type) / all_elsewhere_bytes : 0;
    const auto cache_rows = static_cast<int64_t>(static_cast<double>(peer_setup_.remote_cache_bytes) * share /
                                                 RemoteRowCache::BytesPerRow(type.feature_row_bytes()));
    if (cache_rows > 0) {
      // No more than every row owned elsewhere, and an eighth more: the shards fill unevenly.
      const int64_t elsewhere = type.num_nodes - type.part_rows[part];
      cache = std::make_unique<RemoteRowCache>(std::min(cache_rows, elsewhere + elsewhere / 8 + 1024),
                                               type.feature_row_bytes());
    }
    const auto n = static_cast<size_t>(type.num_nodes);
    loaded.part_rows.push_back(std::make_unique<PartRows>(
        loaded.peers, static_cast<int>(t), static_cast<const std::byte*>(loaded.graph.arrays.data[type.features]),
        type.feature_row_bytes(),
        std::span<const int32_t>(static_cast<const int32_t*>(loaded.graph.arrays.data[type.owner]), n),
        std::span<const int64_t>(static_cast<const int64_t*>(loaded.graph.arrays.data[type.owner_row]), n),
        std::move(cache)));
  }
  LogInfo("dataset '%s': part %d of %d of partition '%s'; the other parts' rows come from %s", loaded.name,
          schema.partition.part, schema.partition.num_parts, schema.partition.dataset_id,
          absl::StrJoin(peer_setup_.peers, ","));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::unique_ptr<RowCache>>> DatasetRegistry::OpenFeatureCaches(
    const v1::DatasetConfig& dataset, const DatasetDir& dir, const GraphData& graph) {
  const absl::StatusOr<uint64_t> bytes = ParseByteSize(dataset.feature_cache());
  if (!bytes.ok()) return absl::InvalidArgumentError(absl::StrCat("feature_cache: ", bytes.status().message()));
  const DatasetSchema& schema = graph.schema;
  // Among rows no announced batch reads, the coldest go first: by the ranking the GPU hot tier uses
  // (expected reads, global ids), else by in-degree.
  absl::StatusOr<std::vector<int64_t>> order = ReadHotOrder(dir.dir(), schema.num_nodes);
  if (!order.ok() && !absl::IsNotFound(order.status())) return order.status();
  uint64_t table_bytes = 0;
  for (const NodeTypeSchema& type : schema.node_types) {
    if (type.features >= 0) table_bytes += schema.arrays[type.features].bytes();
  }
  std::vector<std::unique_ptr<RowCache>> caches(schema.node_types.size());
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const NodeTypeSchema& type = schema.node_types[t];
    if (type.features < 0) continue;
    const NpyFile& file = dir.file(type.features);
    const RowTable table{file.path(), file.header().data_offset, type.feature_row_bytes(), type.num_nodes};
    const uint64_t share = static_cast<uint64_t>(
        static_cast<long double>(*bytes) * schema.arrays[type.features].bytes() / std::max<uint64_t>(table_bytes, 1));
    const bool ranked = order.ok() || schema.homogeneous();  // else every row is as hot as the others
    auto ranks = std::make_shared<const std::vector<int32_t>>(
        order.ok()             ? HeatRanks(*order, type.offset, type.num_nodes)
        : schema.homogeneous() ? DegreeRanks(graph.arrays.indptr(), type.num_nodes)
                               : std::vector<int32_t>(type.num_nodes, 0));
    RowCache::Heat heat = [ranks](int64_t row) { return (*ranks)[row]; };
    GNND_ASSIGN_OR_RETURN(caches[t], RowCache::Create(table, share, std::move(heat), {}));
    // A warm start: the hottest rows, what a static cache would hold, so the first batches need not fill it.
    if (ranked) {
      const auto start = std::chrono::steady_clock::now();
      GNND_ASSIGN_OR_RETURN(const int64_t warmed, caches[t]->WarmUp(HottestRows(*ranks, caches[t]->capacity_rows())));
      LogInfo("dataset '%s': the feature cache of %s starts with its %d hottest rows (read in %.1f s)", dataset.name(),
              table.path, warmed, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    LogInfo(
        "dataset '%s': features stay in %s, read through a cache of %d rows (%.1f MiB, %s reads), %d batches "
        "sampled ahead",
        dataset.name(), table.path, caches[t]->capacity_rows(), caches[t]->memory().size() / 1048576.0,
        caches[t]->stats().direct ? "O_DIRECT" : "buffered: the file system refused O_DIRECT", dataset.look_ahead());
  }
  return caches;
}

absl::StatusOr<std::shared_ptr<LoadedDataset>> DatasetRegistry::MakeCopy(const v1::DatasetConfig& dataset, bool staging,
                                                                         const Progress& progress) {
  const std::string& name = dataset.name();
  const std::string& path = dataset.path();
  const bool on_storage = !dataset.feature_cache().empty();
  const auto start = std::chrono::steady_clock::now();
  GNND_ASSIGN_OR_RETURN(DatasetDir dir, DatasetDir::Open(path));
  if (const DatasetSchema& schema = dir.schema(); schema.partitioned()) {
    const std::string what =
        absl::StrCat("dataset '", name, "' (", path, ") is part ", schema.partition.part, " of ",
                     schema.partition.num_parts, " of partition '", schema.partition.dataset_id, "'");
    if (peer_setup_.peers.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          what,
          ": it holds only its own feature rows; serve it with --peers (the gnnd of each part, HOST:PORT) and "
          "--peer-token-file"));
    }
    if (peer_setup_.peers.size() != schema.partition.num_parts) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": --peers names ", peer_setup_.peers.size(), " addresses, one per part is needed"));
    }
    if (on_storage) return absl::InvalidArgumentError(absl::StrCat(what, ": feature_cache does not apply to a part"));
    if (staging) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": a part is not replaced in place (its peers' port is in use); unload it, then load"));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [other, d] : datasets_) {
      if (d->peers != nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat(what, ": this gnnd already serves part of a partition (dataset '", other, "')"));
      }
    }
  }
  ShmLoadOptions options;
  options.huge_pages = dataset.huge_pages();
  if (on_storage) {
    for (const NodeTypeSchema& type : dir.schema().node_types) {
      if (type.features >= 0) options.on_storage.push_back(type.features);
    }
    if (options.on_storage.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("feature_cache: dataset '", name, "' has no features"));
    }
  }
  options.threads = threads_;
  options.staging = staging;
  options.instance = instance_;
  options.cancelled = &cancel_loads_;
  options.on_array_loaded = [&](const std::string& array, size_t done, size_t total) {
    if (progress) progress(array, done, total);
  };
  absl::StatusOr<std::unique_ptr<ShmDataset>> shm = ShmDataset::Load(name, dir, options);
  if (absl::IsAlreadyExists(shm.status()) && !staging && (!keep_segments_ || on_storage)) {
    // Left by an earlier gnnd of this instance that did not remove it (a killed one): nothing asked to
    // keep it, so it is not trusted to be this directory's copy.
    LogWarning(
        "dataset '%s': removing the copy an earlier gnnd of instance '%s' left in shared memory (attaching "
        "to it takes keep_segments)",
        name, instance_);
    (void)ShmDataset::Remove(name, instance_);
    shm = ShmDataset::Load(name, dir, options);
  } else if (absl::IsAlreadyExists(shm.status()) && !staging) {
    // Left by an earlier gnnd with keep_segments: reuse it if it is the same dataset.
    shm = ShmDataset::Attach(name, /*any_owner=*/false, instance_);
    if (shm.ok() && (*shm)->manifest().SerializeAsString() != dir.manifest().SerializeAsString()) {
      return absl::AlreadyExistsError(absl::StrCat("shared memory holds a different dataset named '", name,
                                                   "'; remove it with `gnnctl shm remove ", name, "`"));
    }
    if (shm.ok()) {
      // Its values are read by the samplers: check them as a load would, and load afresh if they fail.
      if (absl::Status valid = ValidateArrays((*shm)->schema(), (*shm)->arrays(), threads_); !valid.ok()) {
        LogWarning("dataset '%s': the copy in shared memory is not valid (%s); loading it again", name,
                   valid.message());
        shm->reset();
        (void)ShmDataset::Remove(name, instance_);
        shm = ShmDataset::Load(name, dir, options);
      } else {
        LogInfo("dataset '%s': attached to the copy already in shared memory", name);
      }
    }
  }
  if (!shm.ok()) return shm.status();
  auto loaded = std::make_shared<LoadedDataset>();
  loaded->name = name;
  loaded->path = path;
  loaded->shm_set = (*shm)->name();
  loaded->graph = GraphData{(*shm)->manifest(), (*shm)->arrays(), (*shm)->schema()};
  loaded->shm = std::move(*shm);
  if (on_storage) {
    GNND_ASSIGN_OR_RETURN(loaded->feature_caches, OpenFeatureCaches(dataset, dir, loaded->graph));
    loaded->look_ahead = dataset.look_ahead() > 0 ? dataset.look_ahead() : kDefaultLookAhead;
  }
  if (loaded->graph.schema.partitioned()) {
    if (absl::Status connected = ConnectPart(*loaded); !connected.ok()) {
      Drop(*loaded);
      return connected;
    }
    // Batches sampled ahead, whose rows owned elsewhere are asked for at once: the fetches overlap the gathers.
    loaded->look_ahead = dataset.look_ahead() > 0 ? dataset.look_ahead() : kDefaultLookAhead;
  }
  loaded->summary = GraphSummary::Of(loaded->graph);
  loaded->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ShmLoadStats& stats = loaded->shm->load_stats();
  if (stats.bytes > 0) {
    LogEvent(LogLevel::kInfo, "dataset_loaded",
             {{"dataset", name}, {"bytes", absl::StrCat(stats.bytes)}, {"seconds", absl::StrCat(loaded->load_seconds)}},
             "dataset '%s' loaded from %s: %.1f MiB in %.2f s (copy %.2f GB/s), validated in %.2f s", name, path,
             stats.bytes / 1048576.0, loaded->load_seconds, stats.bytes / 1e9 / std::max(stats.copy_seconds, 1e-9),
             stats.validate_seconds);
  }
  LogInfo("dataset '%s': %s", name,
          DescribeDataset(loaded->graph.manifest, loaded->graph.schema, loaded->graph.arrays));
  if (after_load_) after_load_(*loaded);  // still "loading": no session can use it yet
  return loaded;
}

void DatasetRegistry::Drop(LoadedDataset& dataset) {
  Unmap(dataset);
  if (absl::Status s = ShmDataset::Remove(dataset.shm_set, instance_); !s.ok()) {
    LogWarning("removing dataset '%s' (%s): %s", dataset.name, dataset.shm_set, s.message());
  }
}

absl::Status DatasetRegistry::Unload(const std::string& name) {
  std::shared_ptr<LoadedDataset> dataset;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = datasets_.find(name);
    if (it == datasets_.end()) return absl::NotFoundError(absl::StrCat("dataset ", Quoted(name), " is not loaded"));
    if (leases_[name] > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("dataset ", Quoted(name), " is used by ", leases_[name], " session(s); close them first"));
    }
    dataset = std::move(it->second);
    datasets_.erase(it);
  }
  Unmap(*dataset);
  GNND_RETURN_IF_ERROR(ShmDataset::Remove(dataset->shm_set, instance_));
  LogEvent(LogLevel::kInfo, "dataset_unloaded", {{"dataset", name}}, "dataset '%s' unloaded", name);
  return absl::OkStatus();
}

absl::StatusOr<v1::DatasetInfo> DatasetRegistry::Describe(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = datasets_.find(name);
  if (it == datasets_.end()) return absl::NotFoundError(absl::StrCat("dataset ", Quoted(name), " is not loaded"));
  return InfoLocked(*it->second);
}

std::vector<v1::DatasetInfo> DatasetRegistry::List() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<v1::DatasetInfo> out;
  for (const auto& [name, dataset] : datasets_) out.push_back(InfoLocked(*dataset));
  return out;
}

absl::StatusOr<std::unique_ptr<DatasetRegistry::Lease>> DatasetRegistry::Acquire(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = datasets_.find(name);
  if (it == datasets_.end()) {
    std::vector<std::string> served;
    for (const auto& [served_name, dataset] : datasets_) served.push_back(Quoted(served_name));
    return absl::NotFoundError(absl::StrCat("open.dataset: ", Quoted(name), " is not loaded (this gnnd serves ",
                                            served.empty() ? "no dataset" : absl::StrJoin(served, ", "), ")"));
  }
  ++leases_[name];
  return std::make_unique<Lease>(this, it->second);
}

void DatasetRegistry::UnloadAll() {
  std::map<std::string, std::shared_ptr<LoadedDataset>> datasets;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    datasets.swap(datasets_);
  }
  for (auto& [name, dataset] : datasets) {
    Unmap(*dataset);
    if (keep_segments_) {
      LogInfo("dataset '%s' left in shared memory (keep_segments)", name);
    } else if (absl::Status s = ShmDataset::Remove(dataset->shm_set, instance_); !s.ok()) {
      LogWarning("removing dataset '%s': %s", name, s.message());
    }
  }
}

}  // namespace gnnd
