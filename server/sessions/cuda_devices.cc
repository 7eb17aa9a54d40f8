#include "server/sessions/cuda_devices.h"

#include <chrono>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/cuda_check.h"
#include "common/base/log.h"
#include "common/base/status.h"
#include "common/dataset/hot_order.h"
#include "server/mps.h"
#include "server/sessions/cuda_slots.h"

namespace gnnd {

namespace {

// A homogeneous dataset's rows on storage, read through its cache a part at a time (a part no larger than
// half the cache, so a read never waits for room it cannot get); null for features in memory.
cuda::HotTier::ReadRows ReadThroughCache(const LoadedDataset& dataset) {
  if (!dataset.features_on_storage()) return nullptr;
  RowCache* cache = dataset.feature_caches[0].get();
  return [cache](std::span<const int64_t> ids, void* out) -> absl::Status {
    const size_t part = std::max<int64_t>(cache->capacity_rows() / 2, 1);
    for (size_t first = 0; first < ids.size(); first += part) {
      const std::span<const int64_t> rows = ids.subspan(first, std::min(part, ids.size() - first));
      GNND_RETURN_IF_ERROR(
          cache->Gather(cache->Announce(rows), rows, static_cast<std::byte*>(out) + first * cache->table().row_bytes));
    }
    return absl::OkStatus();
  };
}

}  // namespace

CudaDevices::~CudaDevices() = default;

absl::StatusOr<std::unique_ptr<SlotBackend>> CudaDevices::CreateSlots(const SessionPlan& plan,
                                                                      std::unique_ptr<TaskRunner> host_workers) {
  const int gpu = plan.device.cuda;
  int count = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) {
    (void)cudaGetLastError();
    // No GPU or driver here: the request names a device that does not exist. Anything else (a broken MPS
    // server, say) is the machine's state, not the request's.
    const bool absent = error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver;
    return absl::Status(absent ? absl::StatusCode::kInvalidArgument : absl::StatusCode::kUnavailable,
                        absl::StrCat("open.device = '", plan.device.ToString(), "' (no GPU usable by gnnd: ",
                                     cudaGetErrorName(error), ", ", cudaGetErrorString(error), ")"));
  }
  if (gpu >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("open.device = '", plan.device.ToString(), "' (cpu, or cuda:N with N below ", count, ")"));
  }
  if (!MpsActive()) {
    LogWarning(
        "CUDA MPS is not running: gnnd and the trainer will time-slice the GPU instead of sharing it "
        "(start it with nvidia-cuda-mps-control -d)");
  }
  GNND_ASSIGN_OR_RETURN(const cuda::DeviceGraph* graph, Place(*plan.dataset, gpu, /*hot_tier=*/true));
  GNND_ASSIGN_OR_RETURN(std::unique_ptr<CudaSlots> slots,
                        CudaSlots::Create(plan, *graph, HeldRows(*plan.dataset, gpu), std::move(host_workers)));
  CudaSlots* raw = slots.get();
  if (raw->runs_in_slice()) GNND_RETURN_IF_ERROR(PlaceProducer(gpu, *raw));  // else its own stream, whole GPU
  GNND_RETURN_IF_ERROR(slots->PrepareGraphs());  // here, on the setup pool, not in the session's first steps
  LogInfo("session %d: %s, %d slots of %d bytes in GPU memory", plan.session_id, plan.device.ToString(), plan.num_slots,
          plan.slot_bytes());
  return slots;
}

cuda::CscPlacement CudaDevices::CscPlacementFor(const DatasetSchema& schema) const {
  if (!options_.gpu_csc_in_host_memory) return cuda::CscPlacement::kDevice;
  // indptr (8 bytes a node) in GPU memory when it takes at most an eighth of what is free: the sampler's
  // per-node reads then stay off PCIe, and only the neighbor lists cross it.
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda::CscPlacement::kHost;
  }
  size_t indptr_bytes = 0;  // of every relation
  for (const ArraySchema& a : schema.arrays) indptr_bytes += a.role == ArrayRole::kIndptr ? a.bytes() : 0;
  return indptr_bytes <= free / 8 ? cuda::CscPlacement::kHostIndices : cuda::CscPlacement::kHost;
}

absl::StatusOr<const cuda::DeviceGraph*> CudaDevices::Place(const LoadedDataset& dataset, int device, bool hot_tier) {
  std::lock_guard<std::mutex> lock(placed_mutex_);
  auto it = placed_.find({&dataset, device});
  if (it == placed_.end()) {
    GNND_CUDA(cudaSetDevice(device), absl::StrCat("select cuda:", device));
    const cuda::CscPlacement placement = CscPlacementFor(dataset.graph.schema);
    GNND_ASSIGN_OR_RETURN(std::unique_ptr<cuda::DeviceDataset> placed,
                          cuda::DeviceDataset::Create(dataset.graph, placement));
    LogInfo("dataset '%s' placed for cuda:%d (%s, features zero-copy)", dataset.name, device,
            placement == cuda::CscPlacement::kDevice        ? "CSC in GPU memory"
            : placement == cuda::CscPlacement::kHostIndices ? "CSC indices in host memory, indptr in GPU memory"
                                                            : "CSC in host memory");
    it = placed_.emplace(std::make_pair(&dataset, device), std::move(placed)).first;
    if (hot_tier) BuildHotTiers(dataset, {device});
  }
  return &it->second->graph();
}

std::shared_ptr<const std::vector<bool>> CudaDevices::HeldRows(const LoadedDataset& dataset, int device) {
  std::lock_guard<std::mutex> lock(placed_mutex_);
  auto it = hot_tiers_.find(&dataset);
  if (it == hot_tiers_.end()) return nullptr;
  for (const auto& tier : it->second) {
    if (std::find(tier->devices().begin(), tier->devices().end(), device) != tier->devices().end()) {
      return tier->held();
    }
  }
  return nullptr;
}

void CudaDevices::BuildHotTiers(const LoadedDataset& dataset, const std::vector<int>& devices) {
  const v1::DatasetManifest& m = dataset.graph.manifest;
  if (dataset.peers != nullptr) {  // its tables hold only the part's rows: the tier would need the others'
    LogInfo("dataset '%s': a part of a partitioned dataset: no GPU hot tier", dataset.name);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  uint64_t budget = UINT64_MAX;  // per device: the smallest GPU's
  for (int device : devices) {
    size_t free = 0, total = 0;
    if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    budget = std::min(budget, options_.gpu_cache.For(free, total));
  }
  if (budget == 0) return;  // gpu_cache none, or no room
  absl::StatusOr<std::vector<int64_t>> order = ReadHotOrder(dataset.path, dataset.graph.schema.num_nodes);
  if (!order.ok()) {
    if (absl::IsNotFound(order.status())) {
      LogInfo("dataset '%s' has no %s: no GPU hot tier (gnnctl hotness --write ranks its nodes)", dataset.name,
              kHotOrderFile);
    } else {
      LogWarning("dataset '%s': no GPU hot tier: %s", dataset.name, order.status().message());
    }
    return;
  }
  std::vector<std::vector<int>> groups;
  if (devices.size() > 1 && cuda::EnablePeerAccess(devices)) {
    groups.push_back(devices);
  } else {
    for (int device : devices) groups.push_back({device});
  }
  if (dataset.graph.schema.format_version != 1) {
    if (dataset.features_on_storage()) {  // its rows come through the host cache (a typed tier reads rows in memory)
      LogInfo("dataset '%s': typed, features on storage: no GPU hot tier", dataset.name);
      return;
    }
    for (const std::vector<int>& group : groups) BuildTypedHotTiers(dataset, *order, budget, group);
    return;
  }
  // With the CSC in host memory the hot nodes' in-neighbor lists are cached too (sampling reads them).
  const bool adjacency = options_.gpu_csc_in_host_memory;
  for (const std::vector<int>& group : groups) {
    const int64_t num_hot = cuda::HotNodesWithin(dataset.graph, *order, budget, group.size(), adjacency);
    if (num_hot == 0) continue;
    const cuda::DeviceGraph& source = placed_.at({&dataset, group[0]})->graph();
    absl::StatusOr<std::unique_ptr<cuda::HotTier>> tier =
        cuda::HotTier::Create(source, *order, num_hot, group, adjacency, ReadThroughCache(dataset));
    const std::string where = absl::StrCat("cuda:", absl::StrJoin(group, ",cuda:"));
    if (!tier.ok()) {
      LogWarning("dataset '%s': no GPU hot tier on %s: %s", dataset.name, where, tier.status().message());
      continue;
    }
    for (int device : group) placed_.at({&dataset, device})->set_hot(0, (*tier)->view(device));
    // GPU sessions never read these rows from storage: the host cache keeps them last.
    if (dataset.features_on_storage()) dataset.feature_caches[0]->SetHeldElsewhere((*tier)->held());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    LogEvent(LogLevel::kInfo, "hot_tier_built",
             {{"dataset", dataset.name},
              {"devices", where},
              {"rows", absl::StrCat(num_hot)},
              {"bytes_per_device", absl::StrCat((*tier)->bytes_per_device())},
              {"seconds", absl::StrCat(seconds)}},
             "dataset '%s': hot tier of %d rows%s (%.1f%% of nodes) on %s%s, %.2f GB per GPU, in %.2f s", dataset.name,
             num_hot, adjacency ? " and in-neighbor lists" : "", 100.0 * num_hot / std::max<int64_t>(m.num_nodes(), 1),
             where, group.size() > 1 ? " (split over NVLink peers)" : "", (*tier)->bytes_per_device() / 1e9, seconds);
    hot_tiers_[&dataset].push_back(*std::move(tier));
  }
}

void CudaDevices::BuildTypedHotTiers(const LoadedDataset& dataset, const std::vector<int64_t>& order, uint64_t budget,
                                     const std::vector<int>& group) {
  const DatasetSchema& schema = dataset.graph.schema;
  // Every featured type keeps a rank table (4 bytes a node) on each GPU; then the ranking's rows, hottest
  // first across all types, as long as they fit (a row and its label each).
  uint64_t fixed = 0;
  for (const NodeTypeSchema& t : schema.node_types)
    fixed += t.features >= 0 ? 4 * static_cast<uint64_t>(t.num_nodes) : 0;
  if (budget <= fixed) return;
  const double room = static_cast<double>(budget - fixed) * static_cast<double>(group.size());
  std::vector<std::vector<int64_t>> hot(schema.node_types.size());  // ids within each type, hottest first
  double used = 0;
  for (int64_t id : order) {
    const auto type = std::upper_bound(schema.node_types.begin(), schema.node_types.end(), id,
                                       [](int64_t v, const NodeTypeSchema& t) { return v < t.offset; }) -
                      1;
    if (type->features < 0) continue;
    used += static_cast<double>(type->feature_row_bytes() + sizeof(int64_t));
    if (used > room) break;
    hot[type - schema.node_types.begin()].push_back(id - type->offset);
  }
  const std::string where = absl::StrCat("cuda:", absl::StrJoin(group, ",cuda:"));
  for (size_t t = 0; t < hot.size(); ++t) {
    if (hot[t].empty()) continue;
    const NodeTypeSchema& type = schema.node_types[t];
    const cuda::DeviceNodeType& placed = placed_.at({&dataset, group[0]})->graph().types[t];
    cuda::DeviceGraph source;  // the type's table as HotTier reads a dataset's
    source.manifest.set_num_nodes(type.num_nodes);
    source.manifest.set_feature_dim(type.feature_dim);
    source.manifest.set_feature_dtype(dataset.graph.manifest.node_types(static_cast<int>(t)).feature_dtype());
    source.features = placed.features;
    source.labels = placed.labels;
    const auto num_hot = static_cast<int64_t>(hot[t].size());
    absl::StatusOr<std::unique_ptr<cuda::HotTier>> tier = cuda::HotTier::Create(source, hot[t], num_hot, group, false);
    if (!tier.ok()) {
      LogWarning("dataset '%s': no GPU hot tier of '%s' on %s: %s", dataset.name, type.name, where,
                 tier.status().message());
      continue;
    }
    for (int device : group) placed_.at({&dataset, device})->set_hot(static_cast<int>(t), (*tier)->view(device));
    LogEvent(LogLevel::kInfo, "hot_tier_built",
             {{"dataset", dataset.name},
              {"node_type", type.name},
              {"devices", where},
              {"rows", absl::StrCat(num_hot)},
              {"bytes_per_device", absl::StrCat((*tier)->bytes_per_device())}},
             "dataset '%s': hot tier of %d '%s' rows (%.1f%% of them) on %s, %.2f GB per GPU", dataset.name, num_hot,
             type.name, 100.0 * num_hot / std::max<int64_t>(type.num_nodes, 1), where,
             (*tier)->bytes_per_device() / 1e9);
    hot_tiers_[&dataset].push_back(*std::move(tier));
  }
}

void CudaDevices::Prepare(const LoadedDataset& dataset) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {  // no GPU here: nothing to prepare
    (void)cudaGetLastError();
    return;
  }
  std::vector<int> devices = options_.prepare_gpus.devices;
  if (options_.prepare_gpus.all) {
    for (int device = 0; device < count; ++device) devices.push_back(device);
  }
  std::vector<int> placed_devices;
  for (int device : devices) {
    if (device >= count) {
      LogWarning("prepare_gpus names cuda:%d, but there are %d GPUs", device, count);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    if (const absl::StatusOr<const cuda::DeviceGraph*> placed = Place(dataset, device, /*hot_tier=*/false);
        !placed.ok()) {
      LogWarning("dataset '%s' not prepared for cuda:%d (its first session will try again): %s", dataset.name, device,
                 placed.status().message());
      continue;
    }
    placed_devices.push_back(device);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    LogEvent(LogLevel::kInfo, "dataset_prepared",
             {{"dataset", dataset.name}, {"device", absl::StrCat("cuda:", device)}, {"seconds", absl::StrCat(seconds)}},
             "dataset '%s' prepared for cuda:%d in %.2f s", dataset.name, device, seconds);
  }
  if (placed_devices.empty()) return;
  std::lock_guard<std::mutex> lock(placed_mutex_);
  BuildHotTiers(dataset, placed_devices);
}

void CudaDevices::AppendStats(v1::Stats& stats) {
  std::map<int, uint64_t> placed;  // device -> bytes; only GPUs gnnd already uses (no new contexts)
  uint64_t registered = 0;
  {
    std::lock_guard<std::mutex> lock(placed_mutex_);
    for (const auto& [key, dataset] : placed_) {
      placed[key.second] += dataset->placed_bytes();
      registered += dataset->registered_bytes();
    }
    for (const auto& [dataset, tiers] : hot_tiers_) {
      for (const auto& tier : tiers) {
        for (int device : tier->devices()) placed[device] += tier->bytes_per_device();
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(producers_mutex_);
    for (const auto& [device, context] : producer_contexts_) placed.try_emplace(device, 0);
  }
  stats.set_registered_bytes(registered);
  for (const auto& [device, bytes] : placed) {
    size_t free = 0, total = 0;
    if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    v1::GpuMemory& gpu = *stats.add_gpus();
    gpu.set_device(device);
    gpu.set_used_bytes(total - free);
    gpu.set_total_bytes(total);
    gpu.set_placed_bytes(bytes);
  }
}

void CudaDevices::Forget(const LoadedDataset& dataset) {
  std::lock_guard<std::mutex> lock(placed_mutex_);
  hot_tiers_.erase(&dataset);
  // Unregisters the host memory before it is unmapped.
  std::erase_if(placed_, [&](const auto& entry) { return entry.first.first == &dataset; });
}

absl::Status CudaDevices::PlaceProducer(int device, CudaSlots& slots) {
  const int producer_sms = options_.producer_sms;
  if (producer_sms == 0) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(producers_mutex_);
  if (producer_sms > 0) {
    auto it = producer_contexts_.find(device);
    if (it == producer_contexts_.end()) {
      GNND_ASSIGN_OR_RETURN(const int total, cuda::SmCount(device));
      GNND_ASSIGN_OR_RETURN(std::unique_ptr<cuda::GreenContext> context,
                            cuda::GreenContext::Create(device, std::min(producer_sms, total)));
      LogInfo("GPU producers on cuda:%d run in a green context of %d of %d SMs", device, context->sms(), total);
      it = producer_contexts_.emplace(device, std::move(context)).first;
    }
    slots.UseStream(it->second->stream());
    return absl::OkStatus();
  }
  if (!MpsActive()) {
    LogInfo(
        "producer_sms auto on cuda:%d: CUDA MPS is not running, so gnnd and the trainer take turns on the GPU: "
        "producers use all of it (a slice would only make their turns longer)",
        device);
    return absl::OkStatus();
  }
  auto [it, first] = producer_slices_.try_emplace(device);
  if (first) {
    // auto is gnnd's choice, the default: where green contexts cannot be made (a driver before CUDA 12.4, say),
    // producers fall back to the whole GPU rather than fail every session. An explicit N fails instead.
    absl::StatusOr<std::shared_ptr<ProducerSlices>> made = ProducerSlices::Create(device);
    if (made.ok()) {
      it->second = *std::move(made);
      LogInfo(
          "producer_sms auto on cuda:%d: producers start in a green context of %d SMs, larger while a trainer "
          "waits for them",
          device, it->second->smallest_sms());
    } else {
      LogWarning("producer_sms auto on cuda:%d: no green context could be made (%s): producers use the whole GPU",
                 device, made.status().ToString());
    }
  }
  if (it->second != nullptr) slots.UseSlices(it->second);
  return absl::OkStatus();
}

}  // namespace gnnd
