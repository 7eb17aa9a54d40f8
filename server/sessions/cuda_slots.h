// The CUDA slot backend: a session's slots in the trainer's GPU memory, shared by CUDA IPC, with an
// interprocess `ready` and `consumed` event per slot, filled by the session's CudaSampler on a producer
// stream (a green context's, server/sessions/cuda_devices.h). A released slot is refilled once its `consumed`
// event (recorded by the trainer) is complete, checked from the host: gnnd's streams never wait on a
// trainer's work, so a trainer that dies with work pending (whose event then never completes) cannot
// stall gnnd's streams, their teardown or the device. Each fill records `ready`, then a host callback
// wakes the session: no thread waits for the GPU. Every free slot is filled ahead; nothing is allocated
// per batch.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "kernels/cuda/cuda_sampler.h"
#include "kernels/cuda/device_dataset.h"
#include "server/sessions/auto_producer.h"
#include "server/sessions/producer_slices.h"
#include "server/sessions/slice_governor.h"
#include "server/sessions/slot_backend.h"
#include "server/sessions/slot_sampler.h"

namespace gnnd {

class CudaSlots final : public SlotBackend {
 public:
  // On `plan.device`, sampling `graph` (the dataset as that GPU sees it). A dataset with features on storage
  // is staged on the host (staged_slot_sampler.h) by `host_workers`, leaving out the rows marked in `held`
  // (the GPU hot tier's).
  static absl::StatusOr<std::unique_ptr<CudaSlots>> Create(const SessionPlan& plan, const cuda::DeviceGraph& graph,
                                                           std::shared_ptr<const std::vector<bool>> held,
                                                           std::unique_ptr<TaskRunner> host_workers);
  // Whether the producer may run in a slice of the GPU's SMs (false: it copies staged batches, or launches link
  // batches kernel by kernel).
  bool runs_in_slice() const;
  ~CudaSlots() override;

  absl::Status Describe(v1::SessionOpened& opened) override;
  absl::Status StartEpoch(uint64_t epoch, const EpochSeeds& seeds) override;
  // Enqueues fills of the next steps into the free slots whose `consumed` is complete (others are polled
  // again shortly); reports the oldest fill once it is complete on the GPU, so that `ready` can carry the
  // shapes (the trainer's stream still orders itself after the slot's `ready` event).
  absl::StatusOr<PollResult> Poll(v1::BatchReady& ready, BatchTimes& times) override;
  void Release(int slot) override;
  void Stop() override;
  ProducerTimes times() const override;
  std::optional<ProducerChoice> producer_choice() const override;

  // Fills slots on `stream` from now on (a fixed green context's, shared with other sessions) instead of the
  // session's own stream.
  void UseStream(cudaStream_t stream);
  // Fills slots in the GPU's current producer slice (producer_sms auto), following it as it moves, and
  // judging it by this session's batches (SliceGovernor).
  void UseSlices(std::shared_ptr<ProducerSlices> slices);
  // Makes every slot's batch graphs on the session's stream (see CudaSampler::Prepare).
  absl::Status PrepareGraphs();

 private:
  struct Filling {
    int64_t step;
    int slot;
    enum class Part { kGpu, kHost, kFinishing } part = Part::kGpu;  // a two-part fill's (else kFinishing)
    bool two_part = false;                                          // sampled by the GPU, gathered by the host
  };

  CudaSlots() = default;
  // Enqueues the fill of `slot` with `step`'s batch of the current epoch on `stream`, followed by a copy of the
  // counts to the slot's pinned counts, recording `ready` (a two-part fill: `sampled`, its GPU part done) and, if
  // `wake`, a host callback that calls the plan's `wake`. The trainer must be done with the slot (its `consumed`
  // complete).
  absl::Status EnqueueFill(int64_t step, int slot, cudaStream_t stream, bool wake, bool two_part);
  // Two-part fills (SlotSampler::two_parts): moves each fill in flight on as far as it can go (the GPU's part
  // complete: the host's begun; the host's done: the slot finished and `ready` recorded).
  absl::Status AdvanceTwoPartFills();
  // A fill complete on the GPU (`done`) that outgrew a fitted sort or a LABOR bound is made again, on the spot.
  absl::Status FillAgainIfOutgrown(const Filling& fill, cudaEvent_t done);
  static void CUDART_CB OnFilled(void* self);
  absl::Status UploadSeeds(const EpochSeeds& seeds, cudaStream_t stream);
  // After a batch is delivered (with its fill's GPU seconds): tells the governor, and moves to the GPU's
  // current slice if it changed.
  absl::Status FollowSlice(double fill);
  // open.producer "auto": tells the AutoProducer of `fill`, delivered, and follows it.
  void JudgeProducer(const Filling& fill);

  int device_ = 0;
  uint64_t session_id_ = 0;
  std::unique_ptr<SlotSampler> sampler_;  // homogeneous, typed, or staged on the host
  void* slots_ = nullptr;
  int64_t* seeds_ = nullptr;       // the epoch's seeds on the device
  int64_t* seed_times_ = nullptr;  // their times (in seeds_' allocation), where the session's seeds have them
  int64_t max_epoch_seeds_ = 0;
  cudaStream_t stream_ = nullptr;  // the one fills use
  cudaStream_t own_stream_ = nullptr;
  std::vector<cudaEvent_t> ready_, consumed_;
  std::vector<cudaEvent_t> fill_start_, fill_end_;  // per slot, timing its last fill (not shared)
  std::vector<cudaEvent_t> sampled_;                // per slot, a two-part fill's GPU part done
  int32_t* counts_ = nullptr;                       // pinned: per slot, the per-hop counts of its last fill
  size_t counts_per_slot_ = 0;
  std::vector<std::pair<size_t, int>> hop_arrays_;  // the sampler's HopArrays()
  std::function<void()> wake_;
  std::function<void(std::chrono::microseconds)> wake_after_;
  std::chrono::microseconds consumed_poll_{0};  // the delay before looking at `consumed` again

  bool two_part_fills_ = false;         // how the fills enqueued from now on are made
  std::unique_ptr<AutoProducer> auto_;  // open.producer "auto" (features in memory); else null
  std::optional<std::chrono::steady_clock::time_point> auto_delivered_;  // its last batch delivered

  // The running epoch, touched by the polling thread only.
  uint64_t epoch_ = 0;
  EpochSeeds seeds_host_;
  int64_t next_step_ = 0;        // the next step to enqueue
  std::deque<Filling> filling_;  // enqueued, in step order
  std::optional<std::chrono::steady_clock::time_point> busy_since_, starved_since_;

  // producer_sms auto (null otherwise): the GPU's slices, the one fills run in, and what this session saw of
  // it since its last delivered batch.
  std::shared_ptr<ProducerSlices> slices_;
  int slice_level_ = 0;
  SliceGovernor governor_;
  std::chrono::steady_clock::time_point last_delivered_;
  double waited_at_last_delivered_ = 0;  // times_.wait_seconds then

  mutable std::mutex mutex_;
  std::vector<int> free_slots_;
  bool stopped_ = false;
  ProducerTimes times_;
  std::optional<ProducerChoice> choice_;  // open.producer "auto": what it chose and why
};

}  // namespace gnnd
