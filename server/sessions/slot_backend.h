// How a session's batches reach its trainer. A slot backend owns a session's slots (one shared-memory
// segment for the CPU backend, CUDA IPC buffers in GPU memory for the CUDA backend) and the producer
// that fills them; the session (server/sessions/session.h) keeps the stream protocol, the one epoch loop and the
// statistics, and never asks which backend it has. Like a transport in NCCL: a few calls, each backend
// in its own file (cpu_slots.h, cuda_slots.h), and one factory that knows which exist.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/fair_pool.h"
#include "common/base/vocabulary.h"
#include "common/batch/batch.h"
#include "common/batch/recipe.h"
#include "common/batch/seeds.h"
#include "common/dataset/graph.h"
#include "common/wire/open_request.h"
#include "gnnd/v1/service.pb.h"
#include "server/config.h"
#include "server/dataset_registry.h"

namespace gnnd {

// What a backend is built from, checked by the session first.
struct SessionPlan {
  uint64_t session_id = 0;
  const LoadedDataset* dataset = nullptr;  // outlives the backend (the session holds a lease)
  SamplingSpec sampling;                   // what every batch samples
  std::optional<LinkShape> link;           // link sessions: their seed stage
  BatchLayout layout;                      // one slot
  BatchSchema schema;                      // the batch as the trainer reads it (arrays, their counts)
  uint64_t seed = 0;
  int num_slots = 0;
  Device device;
  BatchProducer producer = BatchProducer::kSm;  // a CUDA session's: its GPU's kernels or the host's producer
  // A CUDA session made on the host with its features in memory ("host"): its pinned staging slots, one batch a
  // producer thread at once (0: num_slots, as on storage, where the look-ahead ring holds the batches ahead).
  int staging_slots = 0;
  // open.producer "auto" whose host_gather copies (pinned, a slot's size each) would take the session past
  // max_session_bytes: it makes its batches on the SMs, and says so.
  bool auto_over_memory = false;
  uid_t trainer_uid = 0;   // owns the CPU slot segment when gnnd may hand it over
  EpochSeeds first_epoch;  // the first epoch's seeds (the session starts with them)
  uint64_t first_epoch_number = 0;
  int64_t max_epoch_seeds = 0;  // seeds of one rank in any epoch
  // Called by the backend, on any thread, when Poll() may have a batch that it did not have before; or
  // to be polled again after a delay (something it cannot be told about, e.g. the trainer's GPU work).
  // Both are safe to call after the session is gone (they do nothing then).
  std::function<void()> wake;
  std::function<void(std::chrono::microseconds)> wake_after;

  // The spec, layout and schema of `shape`.
  void SetShape(const SessionShape& shape) {
    sampling = shape.sampling;
    producer = shape.producer;
    link = shape.link;
    layout = shape.layout;
    schema = shape.schema;
  }
  size_t slot_bytes() const { return layout.total_bytes; }
  // What the session's batches are made of, for either backend's batch maker.
  BatchRecipe recipe() const {
    return {&dataset->graph, sampling, link ? std::optional<LinkSeedSpec>(link->seeds) : std::nullopt, seed, layout};
  }
  // Per node type, the rows of features a slot holds.
  std::vector<int64_t> feature_rows() const {
    std::vector<int64_t> rows;
    for (size_t t = 0; t < layout.capacity.max_nodes.size(); ++t) rows.push_back(layout.capacity.FeatureRows(t));
    return rows;
  }
};

// Sets `ready`'s counts for the batch `view` of a slot laid out by `layout` (a link batch's pairs and positives
// besides): the schema's order, and for a homogeneous node batch the per-hop lists API 1.0 clients read.
void SetReadyCounts(const BatchView& view, const BatchLayout& layout, int64_t pairs, int64_t positives,
                    v1::BatchReady& ready);

// How long one batch took, as far as the backend measures it (negative: not measured).
struct BatchTimes {
  double produce = -1;  // the whole batch
  double sample = -1;   // neighbors, dedup, relabel
  double gather = -1;   // feature rows and labels
};

// What SlotBackend::Poll found.
enum class PollResult {
  kBatch,      // the next step's batch is complete
  kPending,    // not yet: the backend calls `wake` when it may be, or a Release() may let it start
  kEpochDone,  // every step of the epoch is delivered (or the backend is stopped)
};

// Producer time, summed over the session: making batches, and waiting for the trainer to release a slot.
struct ProducerTimes {
  double sample_seconds = 0;
  double wait_seconds = 0;
};

// Under open.producer "auto": where the session's batches are made now, and why (auto_producer.h).
struct ProducerChoice {
  BatchProducer producer = BatchProducer::kSm;
  std::string why;
};

class SlotBackend {
 public:
  virtual ~SlotBackend() = default;

  // Adds how the trainer maps the slots (a shared-memory name, or CUDA IPC handles) to `opened`.
  virtual absl::Status Describe(v1::SessionOpened& opened) = 0;
  // The trainer has mapped the slots.
  virtual void Attached() {}
  // Starts producing an epoch's batches; every slot is free (the session waits for all releases).
  virtual absl::Status StartEpoch(uint64_t epoch, const EpochSeeds& seeds) = 0;
  // Starts what can start (batches for free slots) and, if the next step's batch is complete, sets
  // `ready`'s slot, step and counts, and `times`. Never waits for the trainer or the device; an error if
  // producing failed. Called by one thread at a time.
  virtual absl::StatusOr<PollResult> Poll(v1::BatchReady& ready, BatchTimes& times) = 0;
  // The trainer is done with `slot` (one that Poll() gave out): it may be refilled. Any thread.
  virtual void Release(int slot) = 0;
  // Stops producing (Poll() reports kEpochDone from now on); callable from any thread, more than once.
  virtual void Stop() = 0;
  virtual ProducerTimes times() const = 0;
  // Any thread; none but under open.producer "auto".
  virtual std::optional<ProducerChoice> producer_choice() const { return std::nullopt; }
};

// Makes slot backends: the CPU backend always, the CUDA backend where gnnd is built with CUDA. Holds what
// sessions share per GPU (producer green contexts, the datasets placed on each GPU). Thread-safe.
class SlotBackends {
 public:
  struct Options {
    int producer_threads = 1;  // the CPU producers' shared pool (each session may use all of it)
    mode_t slot_mode = 0600;   // CPU slot segments
    bool gpu_csc_in_host_memory = false;
    int producer_sms = 0;                     // GPU producers: 0 the whole GPU, N SMs, -1 auto
    PrepareGpus prepare_gpus = {};            // the GPUs Prepare() places datasets on
    GpuCacheSize gpu_cache = {};              // each GPU's hot tier
    std::string instance = kDefaultInstance;  // whose names the CPU slot segments take
  };
  // Starts the CPU producers' pool: RESOURCE_EXHAUSTED naming producer_threads if its threads cannot start.
  static absl::StatusOr<std::unique_ptr<SlotBackends>> Create(const Options& options);
  ~SlotBackends();

  // INVALID_ARGUMENT naming open.device for a device this gnnd cannot serve.
  absl::StatusOr<std::unique_ptr<SlotBackend>> Create(const SessionPlan& plan);
  // Host memory a session's backend holds beside its slots (a dataset on storage: the look-ahead ring; a GPU
  // session made on the host: its pinned staging), for the session's share of the limits.
  static uint64_t BufferBytes(const SessionPlan& plan);
  int producer_threads() const { return options_.producer_threads; }
  // Places a newly loaded `dataset` on the GPUs of options.prepare_gpus (registration, CSC copy, hot
  // tier), so their first sessions start at once; failures are logged (a session then tries again).
  // Nothing without CUDA.
  void Prepare(const LoadedDataset& dataset);
  // Drops what was placed on GPUs for `dataset`; call before its memory is unmapped.
  void Forget(const LoadedDataset& dataset);
  // GPU memory and registered host memory (nothing without CUDA).
  void AppendStats(v1::Stats& stats);

 private:
  SlotBackends(const Options& options, std::unique_ptr<FairPool> cpu_workers);

  const Options options_;
  std::unique_ptr<FairPool> cpu_workers_;
  std::unique_ptr<class CudaDevices> cuda_;  // null without CUDA
};

}  // namespace gnnd
