// The storage tier: a bounded cache of one feature table whose rows stay in their .npy file, filled by
// RowReader (io_uring) and evicted by exact look-ahead. Batches are a pure function of (seed, epoch, step),
// so a producer samples them W batches before it gathers them and announces each one's ids here: a row's
// next use is then known exactly, and eviction follows Belady's rule within the window (rows no announced
// batch reads go first, the coldest of them first; then the row whose next use is furthest). Belady with
// bypass: a row read for a batch takes a slot only from a row that rule would evict before it (ranked by
// its own next use after that batch); else it is read straight into the batch, so a row read once never
// displaces a hotter one. Prefetch() reads an announced batch's rows that are worth a slot ahead of its
// gather.
//
// The rows live in one shared anonymous mapping (registrable for zero-copy like a dataset segment; nothing
// to clean up in /dev/shm after a crash). A gather pins its rows until it has copied them; a batch larger
// than the cache is refused by CheckBatchFits. A file that changes under gnnd (size, mtime, inode) or
// reads short fails the gathers that need it with DATA_LOSS naming the file and the rows; rows already
// cached stay valid copies of what was read. Thread-safe: any number of gathers and prefetches at once.
#pragma once

#include <sys/stat.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "common/dataset/row_reader.h"
#include "common/dataset/row_tier.h"

namespace gnnd {

struct RowCacheStats {
  int64_t capacity_rows = 0;
  int64_t resident_rows = 0;
  uint64_t hits = 0;            // rows a gather found cached (or being read by a prefetch)
  uint64_t misses = 0;          // rows a gather had to read itself
  uint64_t bypassed = 0;        // of those, rows read straight into the batch (worth less than any cached row)
  uint64_t prefetched = 0;      // rows read ahead of their gather
  uint64_t warmed = 0;          // rows read by WarmUp
  uint64_t held_elsewhere = 0;  // rows of batches that another tier served instead (CountHeldElsewhere)
  uint64_t evictions = 0;
  uint64_t reads = 0;       // io_uring reads submitted
  uint64_t bytes_read = 0;  // bytes they returned
  double read_seconds = 0;  // summed over the batches of reads
  int64_t window = 0;       // batches announced and not yet gathered
  int64_t candidates = 0;   // eviction-heap entries, stale ones included (at most 2 * capacity_rows + 64)
  unsigned queue_depth = 0;
  bool direct = false;  // O_DIRECT (false: the file system refused it and reads are buffered)
};

class RowCache final : public RowTier {
 public:
  // Static hotness of a row: its rank from the coldest (0) to the hottest (num_rows - 1), e.g. by expected
  // reads. Among rows with the same next use, the colder goes first.
  using Heat = std::function<int64_t(int64_t row)>;
  static constexpr uint64_t kNever = UINT64_MAX;  // no announced batch reads the row

  struct Options {
    RowReader::Options reader;
  };

  // What one cached row of `row_bytes` costs: the row plus its bookkeeping (the row -> slot map, the slot's
  // row, pins and state, the free list, the eviction heap at its bound), about 100 bytes.
  static uint64_t BytesPerRow(uint64_t row_bytes);
  // A cache of capacity_bytes / BytesPerRow(table.row_bytes) rows (at least one) of `table`, so that
  // capacity_bytes bounds the rows and their bookkeeping. Opens the file (a reader checks it holds the
  // table) and maps the memory.
  static absl::StatusOr<std::unique_ptr<RowCache>> Create(const RowTable& table, uint64_t capacity_bytes, Heat heat,
                                                          const Options& options);
  ~RowCache() override;
  RowCache(const RowCache&) = delete;
  RowCache& operator=(const RowCache&) = delete;

  // Reads `rows` (distinct; the hottest first, e.g. by expected reads) into the free slots, as many as
  // there are: a warm start, so the first batches find the rows a static cache would hold. Returns the rows
  // read. For a cache just opened, before batches run.
  absl::StatusOr<int64_t> WarmUp(std::span<const int64_t> rows);

  // FAILED_PRECONDITION, naming `what` (e.g. the config field), when a batch of up to `max_rows` rows
  // cannot fit in the cache.
  absl::Status CheckBatchFits(int64_t max_rows, absl::string_view what) const override;

  // A batch that will be gathered later reads rows `ids` (each row once). Returns its ticket (tickets
  // increase: the order of announcements is the order of use the policy assumes).
  uint64_t Announce(std::span<const int64_t> ids) override;
  // A batch announced and never to be gathered (its session stopped).
  void Withdraw(uint64_t ticket) override;
  // Reads an announced batch's missing rows that are worth a slot now: into free memory, or over rows the
  // policy would evict first. Returns the rows read.
  absl::StatusOr<int64_t> Prefetch(uint64_t ticket) override;
  // Copies row ids[i] to out + i * row_bytes, reading the missing rows; the batch announced as `ticket`
  // (with these ids) is done afterwards. Waits while pinned rows leave no room. On error nothing of the
  // batch is promised in `out`.
  absl::Status Gather(uint64_t ticket, std::span<const int64_t> ids, void* out) override;

  // Rows another tier serves to the sessions reading through this cache (a GPU hot tier; indexed by row):
  // colder than every other row, so they are evicted first among rows no announced batch reads.
  void SetHeldElsewhere(std::shared_ptr<const std::vector<bool>> rows);
  // A batch read `rows` rows from that other tier instead of this cache (counted in stats()).
  void CountHeldElsewhere(uint64_t rows) override;

  RowCacheStats stats() const;
  const RowTable& table() const { return table_; }
  uint64_t row_bytes() const override { return table_.row_bytes; }
  int64_t capacity_rows() const { return capacity_rows_; }
  // The cached rows' memory (capacity_rows() * row_bytes).
  std::span<const std::byte> memory() const { return {memory_, memory_bytes_}; }
  // Where `row` is cached now (tests): a slot, or -1.
  int32_t SlotOf(int64_t row) const;

 private:
  enum class SlotState : uint8_t { kFree, kLoading, kReady, kFailed };
  struct Candidate {  // an eviction candidate as it was when pushed; stale once its row's key changes
    uint64_t next_use;
    int64_t heat;
    int64_t row;
  };
  struct EvictFirst {  // heap order: the top is the row to evict first
    bool operator()(const Candidate& a, const Candidate& b) const;
  };

  RowCache(RowTable table, int64_t capacity_rows, Heat heat, const Options& options);
  uint64_t NextUseLocked(int64_t row) const;
  int64_t HeatLocked(int64_t row) const;
  // The heap from the cached, unpinned rows but `except`.
  void RebuildHeapLocked(int64_t except);
  void WithdrawLocked(uint64_t ticket);
  // The row is resident and unpinned: it may be evicted (again) under its current key.
  void PushCandidateLocked(int64_t row);
  // How `row` would rank as a cached row once batch `ticket` has read it.
  Candidate IncomingLocked(int64_t row, uint64_t ticket) const;
  // A slot for `incoming`: free, or that of the unpinned row to evict first if it goes before `incoming`
  // would; -1 if none.
  int32_t TakeSlotLocked(const Candidate& incoming);
  // `row` goes into `slot` (taken), pinned and loading, until Load marks it.
  void ClaimLocked(int64_t row, int32_t slot);
  void UnpinLocked(int32_t slot);
  // Reads `rows` into `destinations` with an idle reader, counting the reads.
  absl::Status ReadRows(std::span<const int64_t> rows, std::span<std::byte* const> destinations);
  // Reads `rows` into `slots` (pinned, kLoading) and marks them ready or failed.
  absl::Status Load(std::span<const int64_t> rows, std::span<const int32_t> slots);
  absl::Status CheckFileUnchanged() const;
  // The lazy heap's size (stale entries included) at which it is rebuilt: 48 bytes a cached row.
  size_t HeapBound() const { return 2 * static_cast<size_t>(capacity_rows_) + 64; }
  std::byte* slot_data(int32_t slot) const { return memory_ + static_cast<size_t>(slot) * table_.row_bytes; }

  const RowTable table_;
  const int64_t capacity_rows_;
  const Heat heat_;
  const RowReader::Options reader_options_;
  struct stat file_at_open_ = {};
  std::byte* memory_ = nullptr;
  size_t memory_bytes_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  absl::flat_hash_map<int64_t, int32_t> slot_of_;  // row -> slot
  std::vector<int64_t> row_;                       // slot -> row
  std::vector<int32_t> pins_;
  std::vector<SlotState> state_;
  std::vector<int32_t> free_;
  int64_t pinned_slots_ = 0;
  std::shared_ptr<const std::vector<bool>> held_elsewhere_;
  std::vector<Candidate> heap_;                                          // lazy: entries are checked when popped
  absl::flat_hash_map<int64_t, absl::InlinedVector<uint64_t, 2>> uses_;  // row -> announced tickets, ascending
  absl::flat_hash_map<uint64_t, std::vector<int64_t>> announced_;        // ticket -> rows
  uint64_t next_ticket_ = 1;
  RowCacheStats stats_;
  std::vector<std::unique_ptr<RowReader>> idle_readers_;  // one per concurrent load, reused
};

}  // namespace gnnd
