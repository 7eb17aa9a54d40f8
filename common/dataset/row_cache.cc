#include "common/dataset/row_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status.h"

namespace gnnd {
namespace {

// "rows 3, 17, 42 and 9 more": enough to find them, never a megabyte of ids.
std::string NameRows(std::span<const int64_t> rows) {
  constexpr size_t kShown = 8;
  std::string out = absl::StrCat(rows.size() == 1 ? "row " : "rows ",
                                 absl::StrJoin(rows.subspan(0, std::min(rows.size(), kShown)), ", "));
  if (rows.size() > kShown) absl::StrAppend(&out, " and ", rows.size() - kShown, " more");
  return out;
}

// The file as it was: same inode, size, mtime and ctime. ctime catches a same-size rewrite whose mtime was
// put back (rsync --inplace -t, touch -r): no one can set it, and every write or metadata change moves it.
bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

}  // namespace

bool RowCache::EvictFirst::operator()(const Candidate& a, const Candidate& b) const {
  if (a.next_use != b.next_use) return a.next_use < b.next_use;  // the later use goes first
  if (a.heat != b.heat) return a.heat > b.heat;                  // then the colder row
  return a.row < b.row;
}

RowCache::RowCache(RowTable table, int64_t capacity_rows, Heat heat, const Options& options)
    : table_(std::move(table)),
      capacity_rows_(capacity_rows),
      heat_(std::move(heat)),
      reader_options_(options.reader),
      row_(capacity_rows, -1),
      pins_(capacity_rows, 0),
      state_(capacity_rows, SlotState::kFree) {
  free_.reserve(capacity_rows);
  for (int64_t s = capacity_rows - 1; s >= 0; --s) free_.push_back(static_cast<int32_t>(s));
  slot_of_.reserve(capacity_rows);
  heap_.reserve(HeapBound());  // never reallocated: a doubling would hold two copies at once
}

uint64_t RowCache::BytesPerRow(uint64_t row_bytes) {
  // slot_of_, reserved for capacity rows, is a power of two of buckets at most 7/8 full: up to 16/7 buckets a
  // row, each an entry and a control byte. heap_ holds HeapBound() entries.
  constexpr uint64_t kBookkeeping = (sizeof(std::pair<int64_t, int32_t>) + 1) * 16 / 7 + sizeof(int64_t) +
                                    sizeof(int32_t) + sizeof(SlotState) + sizeof(int32_t) + 2 * sizeof(Candidate);
  return row_bytes + kBookkeeping;
}

absl::StatusOr<std::unique_ptr<RowCache>> RowCache::Create(const RowTable& table, uint64_t capacity_bytes, Heat heat,
                                                           const Options& options) {
  const RowReader::Options& reader_options = options.reader;
  if (table.row_bytes == 0) return absl::InvalidArgumentError(absl::StrCat(table.path, ": rows of 0 bytes"));
  const int64_t rows = static_cast<int64_t>(
      std::clamp<uint64_t>(capacity_bytes / BytesPerRow(table.row_bytes), 1, std::max<int64_t>(table.num_rows, 1)));
  if (rows > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("a feature cache of ", rows, " rows (at most ", INT32_MAX, ")"));
  }
  GNND_ASSIGN_OR_RETURN(std::unique_ptr<RowReader> reader, RowReader::Open(table, reader_options));
  auto cache = std::unique_ptr<RowCache>(new RowCache(table, rows, std::move(heat), options));
  if (::stat(table.path.c_str(), &cache->file_at_open_) != 0) {
    return ErrnoStatus(errno, absl::StrCat("stat ", table.path));
  }
  cache->memory_bytes_ = static_cast<size_t>(rows) * table.row_bytes;
  // Shared and anonymous: registrable for zero-copy GPU reads like a segment, and gone with the process.
  void* memory =
      ::mmap(nullptr, cache->memory_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    return ErrnoStatus(errno, absl::StrCat("map a feature cache of ", cache->memory_bytes_, " bytes"));
  }
  cache->memory_ = static_cast<std::byte*>(memory);
  cache->stats_.capacity_rows = rows;
  cache->stats_.queue_depth = reader_options.queue_depth;
  cache->stats_.direct = reader->direct();
  cache->idle_readers_.push_back(std::move(reader));
  return cache;
}

RowCache::~RowCache() {
  if (memory_ != nullptr) ::munmap(memory_, memory_bytes_);
}

absl::Status RowCache::CheckBatchFits(int64_t max_rows, absl::string_view what) const {
  if (max_rows <= capacity_rows_) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(what, ": the feature cache of ", table_.path, " holds ", capacity_rows_, " rows of ",
                   table_.row_bytes, " bytes, and one batch may read up to ", max_rows, " rows; give it at least ",
                   static_cast<uint64_t>(max_rows) * BytesPerRow(table_.row_bytes),
                   " bytes (the rows and their bookkeeping; or ask for smaller batches)"));
}

uint64_t RowCache::NextUseLocked(int64_t row) const {
  auto it = uses_.find(row);
  return it == uses_.end() ? kNever : it->second.front();
}

RowCache::Candidate RowCache::IncomingLocked(int64_t row, uint64_t ticket) const {
  uint64_t next_use = kNever;
  if (auto it = uses_.find(row); it != uses_.end()) {
    auto later = std::upper_bound(it->second.begin(), it->second.end(), ticket);
    if (later != it->second.end()) next_use = *later;
  }
  return {next_use, HeatLocked(row), row};
}

int64_t RowCache::HeatLocked(int64_t row) const {
  if (held_elsewhere_ != nullptr && static_cast<size_t>(row) < held_elsewhere_->size() && (*held_elsewhere_)[row]) {
    return -1;  // colder than every row only this cache holds
  }
  return heat_ ? heat_(row) : 0;
}

void RowCache::RebuildHeapLocked(int64_t except) {
  heap_.clear();
  for (const auto& [r, s] : slot_of_) {
    if (pins_[s] == 0 && state_[s] == SlotState::kReady && r != except)
      heap_.push_back({NextUseLocked(r), HeatLocked(r), r});
  }
  std::make_heap(heap_.begin(), heap_.end(), EvictFirst());
}

void RowCache::CountHeldElsewhere(uint64_t rows) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.held_elsewhere += rows;
}

void RowCache::SetHeldElsewhere(std::shared_ptr<const std::vector<bool>> rows) {
  std::lock_guard<std::mutex> lock(mutex_);
  held_elsewhere_ = std::move(rows);
  RebuildHeapLocked(-1);  // the cached rows' keys changed
}

void RowCache::PushCandidateLocked(int64_t row) {
  if (heap_.size() >= HeapBound()) RebuildHeapLocked(row);  // mostly stale (at most capacity_rows_ entries)
  heap_.push_back({NextUseLocked(row), HeatLocked(row), row});
  std::push_heap(heap_.begin(), heap_.end(), EvictFirst());
}

int32_t RowCache::TakeSlotLocked(const Candidate& incoming) {
  if (!free_.empty()) {
    const int32_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  while (!heap_.empty()) {
    const Candidate top = heap_.front();
    auto it = slot_of_.find(top.row);
    const bool valid = it != slot_of_.end() && pins_[it->second] == 0 && state_[it->second] == SlotState::kReady &&
                       NextUseLocked(top.row) == top.next_use;
    if (valid && !EvictFirst()(incoming, top)) return -1;  // the incoming row is worth less than the best victim
    std::pop_heap(heap_.begin(), heap_.end(), EvictFirst());
    heap_.pop_back();
    if (!valid) continue;
    const int32_t slot = it->second;
    slot_of_.erase(it);
    ++stats_.evictions;
    return slot;
  }
  return -1;
}

void RowCache::ClaimLocked(int64_t row, int32_t slot) {
  slot_of_[row] = slot;
  row_[slot] = row;
  state_[slot] = SlotState::kLoading;
  pins_[slot] = 1;
  ++pinned_slots_;
}

void RowCache::UnpinLocked(int32_t slot) {
  if (--pins_[slot] > 0) return;
  --pinned_slots_;
  if (state_[slot] == SlotState::kFailed) {  // a failed read: forget the row (a later gather tries again)
    slot_of_.erase(row_[slot]);
    state_[slot] = SlotState::kFree;
    free_.push_back(slot);
    return;
  }
  PushCandidateLocked(row_[slot]);
}

uint64_t RowCache::Announce(std::span<const int64_t> ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t ticket = next_ticket_++;
  for (int64_t row : ids) {
    absl::InlinedVector<uint64_t, 2>& uses = uses_[row];
    uses.push_back(ticket);
    // A cached row's key changed (its next use came closer); its old heap entry is stale now.
    if (auto it = slot_of_.find(row);
        it != slot_of_.end() && uses.size() == 1 && pins_[it->second] == 0 && state_[it->second] == SlotState::kReady) {
      PushCandidateLocked(row);
    }
  }
  announced_.emplace(ticket, std::vector<int64_t>(ids.begin(), ids.end()));
  return ticket;
}

void RowCache::Withdraw(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  WithdrawLocked(ticket);
}

void RowCache::WithdrawLocked(uint64_t ticket) {
  auto it = announced_.find(ticket);
  if (it == announced_.end()) return;
  for (int64_t row : it->second) {
    auto uses = uses_.find(row);
    if (uses == uses_.end()) continue;
    auto& tickets = uses->second;
    tickets.erase(std::find(tickets.begin(), tickets.end(), ticket));
    if (tickets.empty()) uses_.erase(uses);
    if (auto at = slot_of_.find(row);
        at != slot_of_.end() && pins_[at->second] == 0 && state_[at->second] == SlotState::kReady) {
      PushCandidateLocked(row);  // its next use moved
    }
  }
  announced_.erase(it);
}

absl::Status RowCache::CheckFileUnchanged() const {
  struct stat now = {};
  if (::stat(table_.path.c_str(), &now) != 0) return ErrnoStatus(errno, absl::StrCat("stat ", table_.path));
  if (!SameFile(now, file_at_open_)) {
    return absl::DataLossError(absl::StrCat(
        "the features file ", table_.path, " changed under gnnd (replaced, rewritten or resized since it was opened)"));
  }
  return absl::OkStatus();
}

absl::Status RowCache::ReadRows(std::span<const int64_t> rows, std::span<std::byte* const> destinations) {
  absl::Status status = CheckFileUnchanged();
  const bool unchanged_before = status.ok();
  std::unique_ptr<RowReader> reader;
  if (status.ok()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!idle_readers_.empty()) {
        reader = std::move(idle_readers_.back());
        idle_readers_.pop_back();
      }
    }
    if (reader == nullptr) {
      absl::StatusOr<std::unique_ptr<RowReader>> opened = RowReader::Open(table_, reader_options_);
      if (opened.ok()) reader = *std::move(opened);
      status = opened.status();
    }
  }
  RowReader::Stats before, after;
  double seconds = 0;
  if (status.ok()) {
    before = reader->stats();
    const auto start = std::chrono::steady_clock::now();
    status = reader->Read(rows, destinations);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    after = reader->stats();
  }
  // Checked again after the open and the read, whatever they returned: a rewrite moves ctime before it changes a
  // byte, so an unchanged file now means every byte read was the file's as opened. A file cut or replaced
  // meanwhile says so, not just that a reader's open or read came up short.
  if (unchanged_before) {
    if (absl::Status changed = CheckFileUnchanged(); !changed.ok()) status = changed;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (reader != nullptr) idle_readers_.push_back(std::move(reader));
  stats_.reads += after.reads - before.reads;
  stats_.bytes_read += after.bytes_read - before.bytes_read;
  stats_.read_seconds += seconds;
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat("reading ", NameRows(rows), " of ", table_.path, ": ", status.message()));
}

absl::Status RowCache::Load(std::span<const int64_t> rows, std::span<const int32_t> slots) {
  std::vector<std::byte*> destinations(rows.size());  // straight into the slots: pinned, nobody reads them yet
  for (size_t i = 0; i < rows.size(); ++i) destinations[i] = slot_data(slots[i]);
  const absl::Status status = ReadRows(rows, destinations);
  std::lock_guard<std::mutex> lock(mutex_);
  for (int32_t slot : slots) state_[slot] = status.ok() ? SlotState::kReady : SlotState::kFailed;
  changed_.notify_all();
  return status;
}

absl::StatusOr<int64_t> RowCache::WarmUp(std::span<const int64_t> rows) {
  std::vector<int64_t> taken;
  std::vector<int32_t> slots;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int64_t row : rows) {  // all checked before any slot is taken
      if (row < 0 || row >= table_.num_rows) {
        return absl::InvalidArgumentError(
            absl::StrCat("warm start: row ", row, " of ", table_.path, " (", table_.num_rows, " rows)"));
      }
    }
    for (int64_t row : rows) {
      if (taken.size() == free_.size()) break;
      if (!slot_of_.contains(row)) taken.push_back(row);
    }
    // In file order, so that each chunk reads runs of adjacent pages (merged into large reads), not scattered ones.
    std::sort(taken.begin(), taken.end());
    taken.erase(std::unique(taken.begin(), taken.end()), taken.end());  // a repeat would claim two slots
    for (int64_t row : taken) {
      slots.push_back(free_.back());
      free_.pop_back();
      ClaimLocked(row, slots.back());
    }
  }
  constexpr size_t kChunk = 1 << 20;  // rows a read call: bounds the reader's bookkeeping
  absl::Status status;
  for (size_t begin = 0; begin < taken.size() && status.ok(); begin += kChunk) {
    const size_t count = std::min(kChunk, taken.size() - begin);
    status = Load(std::span(taken).subspan(begin, count), std::span(slots).subspan(begin, count));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < slots.size(); ++i) {
    if (state_[slots[i]] == SlotState::kLoading) state_[slots[i]] = SlotState::kFailed;  // a chunk never read
    UnpinLocked(slots[i]);
  }
  changed_.notify_all();
  if (!status.ok()) return status;
  stats_.warmed += taken.size();
  return static_cast<int64_t>(taken.size());
}

absl::StatusOr<int64_t> RowCache::Prefetch(uint64_t ticket) {
  std::vector<int64_t> rows;
  std::vector<int32_t> slots;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = announced_.find(ticket);
    if (it == announced_.end()) return 0;
    for (int64_t row : it->second) {
      if (slot_of_.contains(row)) continue;
      // Worth a slot only over a row used later than this one is after the batch (or as late and colder):
      // otherwise the gather reads it straight into the batch, and the row it would evict stays.
      const int32_t slot = TakeSlotLocked(IncomingLocked(row, ticket));
      if (slot < 0) continue;
      ClaimLocked(row, slot);
      rows.push_back(row);
      slots.push_back(slot);
    }
  }
  if (rows.empty()) return 0;
  const absl::Status loaded = Load(rows, slots);
  std::lock_guard<std::mutex> lock(mutex_);
  if (loaded.ok()) stats_.prefetched += rows.size();
  for (int32_t slot : slots) UnpinLocked(slot);
  changed_.notify_all();
  if (!loaded.ok()) return loaded;
  return static_cast<int64_t>(rows.size());
}

absl::Status RowCache::Gather(uint64_t ticket, std::span<const int64_t> ids, void* out) {
  for (int64_t row : ids) {
    if (row < 0 || row >= table_.num_rows) {
      Withdraw(ticket);
      return absl::InvalidArgumentError(
          absl::StrCat("row ", row, " of ", table_.path, " (", table_.num_rows, " rows)"));
    }
  }
  if (static_cast<int64_t>(ids.size()) > capacity_rows_) {  // no waiting would make room for it
    Withdraw(ticket);
    return CheckBatchFits(static_cast<int64_t>(ids.size()), "gather");
  }
  std::vector<int32_t> slots(ids.size(), -1);
  std::vector<int64_t> missing_rows, bypass_rows;
  std::vector<int32_t> missing_slots;
  std::vector<std::byte*> bypass_to;
  std::unique_lock<std::mutex> lock(mutex_);
  // Room first, so that a batch never holds some pins while it waits for more (two could wait forever):
  // every slot it pins that is not pinned now comes from the unpinned ones.
  changed_.wait(lock, [&] {
    int64_t needed = 0;
    for (int64_t row : ids) {
      auto it = slot_of_.find(row);
      needed += it == slot_of_.end() || pins_[it->second] == 0;
    }
    return needed <= capacity_rows_ - pinned_slots_;
  });
  for (size_t i = 0; i < ids.size(); ++i) {  // pin what is cached, so that nothing below evicts it
    auto it = slot_of_.find(ids[i]);
    if (it == slot_of_.end()) continue;
    slots[i] = it->second;
    if (pins_[it->second]++ == 0) ++pinned_slots_;
    ++stats_.hits;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (slots[i] >= 0) continue;
    if (auto it = slot_of_.find(ids[i]); it != slot_of_.end()) {  // a repeat of a row this gather reads
      slots[i] = it->second;
      ++pins_[it->second];
      continue;
    }
    ++stats_.misses;
    const int32_t slot = TakeSlotLocked(IncomingLocked(ids[i], ticket));
    if (slot < 0) {  // read straight into the batch: the rows it would evict are worth more
      bypass_rows.push_back(ids[i]);
      bypass_to.push_back(static_cast<std::byte*>(out) + i * table_.row_bytes);
      continue;
    }
    ClaimLocked(ids[i], slot);
    slots[i] = slot;
    missing_rows.push_back(ids[i]);
    missing_slots.push_back(slot);
  }
  stats_.bypassed += bypass_rows.size();
  lock.unlock();
  absl::Status status = missing_rows.empty() ? absl::OkStatus() : Load(missing_rows, missing_slots);
  if (status.ok() && !bypass_rows.empty()) status = ReadRows(bypass_rows, bypass_to);
  lock.lock();
  // Rows another gather or a prefetch was reading when this one pinned them.
  changed_.wait(lock, [&] {
    return std::none_of(slots.begin(), slots.end(),
                        [&](int32_t s) { return s >= 0 && state_[s] == SlotState::kLoading; });
  });
  if (status.ok()) {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (slots[i] >= 0 && state_[slots[i]] == SlotState::kFailed) {
        // Read (and failed) by a read ahead or another batch: say why where the file tells.
        const absl::Status why = CheckFileUnchanged();
        status = absl::DataLossError(
            absl::StrCat("reading row ", ids[i], " of ", table_.path, " failed",
                         why.ok() ? " (in a read ahead or another batch's read)" : absl::StrCat(": ", why.message())));
        break;
      }
    }
  }
  lock.unlock();
  if (status.ok()) {  // pinned: no one moves them
    auto* dst = static_cast<std::byte*>(out);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (slots[i] >= 0) std::memcpy(dst + i * table_.row_bytes, slot_data(slots[i]), table_.row_bytes);
    }
  }
  lock.lock();
  WithdrawLocked(ticket);  // done: the rows' next uses move on (before the unpins push them as candidates)
  for (int32_t slot : slots) {
    if (slot >= 0) UnpinLocked(slot);
  }
  changed_.notify_all();
  return status;
}

RowCacheStats RowCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  RowCacheStats s = stats_;
  s.resident_rows = static_cast<int64_t>(slot_of_.size());
  s.window = static_cast<int64_t>(announced_.size());
  s.candidates = static_cast<int64_t>(heap_.size());
  return s;
}

int32_t RowCache::SlotOf(int64_t row) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = slot_of_.find(row);
  return it == slot_of_.end() ? -1 : it->second;
}

}  // namespace gnnd
