#include "common/dataset/shm_store.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <set>

#include "gtest/gtest.h"
#include "tests/unit/test_util.h"

namespace gnnd {
namespace {

using testing::ScratchDir;
using testing::SmallDataset;

std::string UniqueName(const std::string& tag) { return absl::StrCat("test-", ::getpid(), "-", tag); }

bool SegmentExists(const std::string& name, absl::string_view suffix) {
  return std::filesystem::exists(absl::StrCat("/dev/shm/", ShmSegmentName(kDefaultInstance, name, suffix)));
}

uint32_t Crc(const void* data, size_t bytes) {
  return static_cast<uint32_t>(crc32_z(crc32_z(0, Z_NULL, 0), static_cast<const Bytef*>(data), bytes));
}

class ShmStore : public ::testing::Test {
 protected:
  void SetUp() override {
    SmallDataset().Write(dir_.path());
    auto d = DatasetDir::Open(dir_.path());
    ASSERT_TRUE(d.ok()) << d.status();
    source_.emplace(std::move(*d));
  }
  ScratchDir dir_;
  std::optional<DatasetDir> source_;
};

TEST_F(ShmStore, LoadAttachUnload) {
  const std::string name = UniqueName("basic");
  auto loaded = ShmDataset::Load(name, *source_, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->load_stats().bytes, 40u + 24 + 32 + 32 + 16 + 8 + 0);
  struct stat st;
  ASSERT_EQ(::stat(absl::StrCat("/dev/shm/", ShmSegmentName(kDefaultInstance, name, "features")).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto attached = ShmDataset::Attach(name);
  ASSERT_TRUE(attached.ok()) << attached.status();
  EXPECT_EQ((*attached)->manifest().num_edges(), 6);
  for (ArrayId id : kAllArrays) {
    const size_t bytes = ArrayBytes(source_->manifest(), id);
    EXPECT_EQ(std::memcmp((*attached)->arrays()[id], source_->file(id).data(), bytes), 0) << ArrayName(id);
  }
  EXPECT_EQ(ShmDataset::Load(name, *source_, {}).status().code(), absl::StatusCode::kAlreadyExists);
  bool listed = false;
  for (const ShmDatasetInfo& info : ShmDataset::List()) listed |= info.name == name && info.state == ShmState::kReady;
  EXPECT_TRUE(listed);

  ASSERT_TRUE(ShmDataset::Remove(name).ok());
  for (ArrayId id : kAllArrays) EXPECT_FALSE(SegmentExists(name, ArrayName(id)));
  EXPECT_FALSE(SegmentExists(name, "meta"));
  EXPECT_EQ(ShmDataset::Attach(name).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ShmDataset::Remove(name).code(), absl::StatusCode::kNotFound);
}

TEST_F(ShmStore, PermissionsAndHugePagesAreOptions) {
  const std::string name = UniqueName("perm");
  ShmLoadOptions options;
  options.permissions = 0640;
  options.huge_pages = true;  // honored or reported, never an error
  auto loaded = ShmDataset::Load(name, *source_, options);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  struct stat st;
  ASSERT_EQ(::stat(absl::StrCat("/dev/shm/", ShmSegmentName(kDefaultInstance, name, "indices")).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  ASSERT_TRUE(ShmDataset::Remove(name).ok());
}

TEST_F(ShmStore, SecondProcessSeesTheSameBytes) {
  const std::string name = UniqueName("xproc");
  auto loaded = ShmDataset::Load(name, *source_, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const size_t bytes = ArrayBytes(source_->manifest(), ArrayId::kFeatures);
  const uint32_t expected = Crc(source_->file(ArrayId::kFeatures).data(), bytes);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {  // attach read-only in a separate address space and report a checksum
    uint32_t crc = 0;
    auto attached = ShmDataset::Attach(name);
    if (attached.ok()) crc = Crc((*attached)->arrays()[ArrayId::kFeatures], bytes);
    (void)!::write(fds[1], &crc, sizeof(crc));
    ::_exit(0);
  }
  uint32_t reported = 0;
  ASSERT_EQ(::read(fds[0], &reported, sizeof(reported)), static_cast<ssize_t>(sizeof(reported)));
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(reported, expected);
  ASSERT_TRUE(ShmDataset::Remove(name).ok());
}

TEST(ShmStoreTyped, EveryArrayOfTheSchemaIsASegmentAndRemoveTakesThemAll) {
  ScratchDir dir;
  testing::TypedDataset().Write(dir.path());
  auto source = DatasetDir::Open(dir.path());
  ASSERT_TRUE(source.ok()) << source.status();
  const std::string name = UniqueName("typed");
  ShmLoadOptions options;
  options.staging = true;  // published below, as a reload is
  std::vector<std::string> loaded_arrays;
  options.on_array_loaded = [&](const std::string& array, size_t, size_t) { loaded_arrays.push_back(array); };
  auto staged = ShmDataset::Load(name, *source, options);
  ASSERT_TRUE(staged.ok()) << staged.status();
  ASSERT_EQ(loaded_arrays.size(), source->schema().arrays.size() - 1);  // paper.test is empty
  EXPECT_TRUE(SegmentExists(name + ".staged", "author___writes___paper.indices"));
  ASSERT_TRUE((*staged)->Publish().ok());
  EXPECT_FALSE(SegmentExists(name + ".staged", "author___writes___paper.indices"));

  auto attached = ShmDataset::Attach(name);
  ASSERT_TRUE(attached.ok()) << attached.status();
  EXPECT_EQ((*attached)->schema().node_types.size(), 3u);
  for (size_t i = 0; i < source->schema().arrays.size(); ++i) {
    const ArraySchema& array = source->schema().arrays[i];
    EXPECT_TRUE(SegmentExists(name, array.name)) << array.name;
    EXPECT_EQ(std::memcmp((*attached)->arrays().data[i], source->file(i).data(), array.bytes()), 0) << array.name;
  }
  EXPECT_TRUE(ValidateArrays((*attached)->schema(), (*attached)->arrays(), 1).ok());
  attached->reset();
  staged->reset();
  ASSERT_TRUE(ShmDataset::Remove(name).ok());
  for (const ArraySchema& array : source->schema().arrays) EXPECT_FALSE(SegmentExists(name, array.name)) << array.name;
  EXPECT_FALSE(SegmentExists(name, "meta"));
}

TEST_F(ShmStore, KilledLoadIsNeverSeenAsCompleteAndIsCleanedByTheNextLoad) {
  const std::string name = UniqueName("killed");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ShmLoadOptions options;
    options.on_array_loaded = [&](const std::string& array, size_t, size_t) {
      if (array == "indices") {  // two arrays in: tell the parent, then wait to be killed
        (void)!::write(fds[1], "x", 1);
        ::pause();
      }
    };
    (void)ShmDataset::Load(name, *source_, options);
    ::_exit(1);
  }
  char byte;
  ASSERT_EQ(::read(fds[0], &byte, 1), 1);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);

  EXPECT_TRUE(SegmentExists(name, "meta"));
  EXPECT_TRUE(SegmentExists(name, "indices"));
  auto attached = ShmDataset::Attach(name);
  ASSERT_EQ(attached.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(attached.status().message()).find("stale"), std::string::npos) << attached.status();
  bool stale = false;
  for (const ShmDatasetInfo& info : ShmDataset::List()) stale |= info.name == name && info.state == ShmState::kStale;
  EXPECT_TRUE(stale);

  auto reloaded = ShmDataset::Load(name, *source_, {});
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_TRUE(ShmDataset::Attach(name).ok());
  ASSERT_TRUE(ShmDataset::Remove(name).ok());
}

TEST_F(ShmStore, LoadWhileAnotherLoadRunsIsRefused) {
  const std::string name = UniqueName("busy");
  absl::Status inner;
  ShmLoadOptions options;
  options.on_array_loaded = [&](const std::string& array, size_t, size_t) {
    if (array == "indptr") {
      inner = ShmDataset::Load(name, *source_, {}).status();
      EXPECT_EQ(ShmDataset::Attach(name).status().code(), absl::StatusCode::kUnavailable);
    }
  };
  ASSERT_TRUE(ShmDataset::Load(name, *source_, options).ok());
  EXPECT_EQ(inner.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(std::string(inner.message()).find("being loaded by pid"), std::string::npos) << inner;
  ASSERT_TRUE(ShmDataset::Remove(name).ok());
}

TEST_F(ShmStore, InvalidContentIsRejectedAndNothingIsLeft) {
  SmallDataset bad;
  bad.indices[2] = 77;
  ScratchDir other;
  bad.Write(other.path());
  auto source = DatasetDir::Open(other.path());
  ASSERT_TRUE(source.ok());
  const std::string name = UniqueName("invalid");
  auto loaded = ShmDataset::Load(name, *source, {});
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(), "indices.npy: indices[2] = 77 is not a node id (num_nodes = 4)");
  EXPECT_FALSE(SegmentExists(name, "meta"));
  EXPECT_FALSE(SegmentExists(name, "indices"));
}

TEST_F(ShmStore, AStagedSetBesideTheServedOneIsPublishedUnderItsName) {
  const std::string name = UniqueName("staged");
  auto served = ShmDataset::Load(name, *source_, {});
  ASSERT_TRUE(served.ok()) << served.status();
  auto staged = ShmDataset::Load(name, *source_, {.staging = true});  // beside the served copy
  ASSERT_TRUE(staged.ok()) << staged.status();
  EXPECT_EQ((*staged)->name(), ShmDataset::StagedName(name));
  EXPECT_TRUE(SegmentExists(ShmDataset::StagedName(name), "features"));
  // Never over the served copy's segments.
  EXPECT_EQ((*staged)->Publish().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*staged)->name(), ShmDataset::StagedName(name));
  EXPECT_TRUE(SegmentExists(ShmDataset::StagedName(name), "indptr")) << "a refused publish renamed a segment";
  EXPECT_TRUE(SegmentExists(ShmDataset::StagedName(name), "meta"));

  served->reset();
  ASSERT_TRUE(ShmDataset::Remove(name).ok());
  ASSERT_TRUE((*staged)->Publish().ok());
  EXPECT_EQ((*staged)->name(), name);
  EXPECT_FALSE(SegmentExists(ShmDataset::StagedName(name), "meta"));
  auto attached = ShmDataset::Attach(name);  // whole and ready under the dataset's name
  ASSERT_TRUE(attached.ok()) << attached.status();
  const ArrayId id = ArrayId::kFeatures;
  EXPECT_EQ(std::memcmp((*attached)->arrays()[id], (*staged)->arrays()[id], ArrayBytes(source_->manifest(), id)), 0);
  ASSERT_TRUE(ShmDataset::Remove(name).ok());
}

TEST_F(ShmStore, ArraysOnStorageGetNoSegmentAndAStagedSetWithoutThemPublishes) {
  const std::string name = UniqueName("storage");
  const int features = source_->arrays().positions[static_cast<int>(ArrayId::kFeatures)];
  auto staged = ShmDataset::Load(name, *source_, {.staging = true, .on_storage = {features}});
  ASSERT_TRUE(staged.ok()) << staged.status();
  EXPECT_EQ((*staged)->arrays()[ArrayId::kFeatures], nullptr);
  EXPECT_NE((*staged)->arrays()[ArrayId::kIndptr], nullptr);
  EXPECT_EQ((*staged)->load_stats().bytes,
            source_->schema().total_bytes() - ArrayBytes(source_->manifest(), ArrayId::kFeatures));
  EXPECT_FALSE(SegmentExists(ShmDataset::StagedName(name), "features"));
  ASSERT_TRUE((*staged)->Publish().ok());
  EXPECT_TRUE(SegmentExists(name, "indptr"));
  EXPECT_FALSE(SegmentExists(name, "features"));
  ASSERT_TRUE(ShmDataset::Remove(name).ok());
}

TEST_F(ShmStore, AStagedSetLeftByAnEarlierLoadIsReplacedAndCanBeRemoved) {
  const std::string name = UniqueName("debris");
  auto left = ShmDataset::Load(name, *source_, {.staging = true});
  ASSERT_TRUE(left.ok()) << left.status();
  left->reset();  // gnnd stopped before publishing it
  auto again = ShmDataset::Load(name, *source_, {.staging = true});
  ASSERT_TRUE(again.ok()) << again.status();
  again->reset();
  EXPECT_TRUE(ShmDataset::Remove(ShmDataset::StagedName(name)).ok());
  EXPECT_FALSE(SegmentExists(ShmDataset::StagedName(name), "meta"));
  EXPECT_EQ(ShmDataset::Remove(name + ".other").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ShmStore, InstancesNeverShareANameAndAreListed) {
  // Two gnnd instances on one host load a dataset of the same name: distinct segments, each removable
  // alone, both listed with their instance.
  const std::string name = UniqueName("instances");
  const std::string other = absl::StrCat("t", ::getpid());
  ShmLoadOptions in_other;
  in_other.instance = other;
  auto mine = ShmDataset::Load(name, *source_, {});
  ASSERT_TRUE(mine.ok()) << mine.status();
  auto theirs = ShmDataset::Load(name, *source_, in_other);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  EXPECT_EQ(ShmSegmentName(other, name, "meta"), absl::StrCat("gnnd-", other, ".", name, ".meta"));
  EXPECT_TRUE(std::filesystem::exists(absl::StrCat("/dev/shm/", ShmSegmentName(other, name, "indices"))));
  std::set<std::string> listed;
  for (const ShmDatasetInfo& info : ShmDataset::List()) {
    if (info.name == name && info.state == ShmState::kReady) listed.insert(info.instance);
  }
  EXPECT_EQ(listed, (std::set<std::string>{kDefaultInstance, other}));
  auto attached = ShmDataset::Attach(name, /*any_owner=*/false, other);
  ASSERT_TRUE(attached.ok()) << attached.status();
  EXPECT_EQ(std::memcmp((*attached)->arrays()[ArrayId::kIndices], (*mine)->arrays()[ArrayId::kIndices],
                        ArrayBytes(source_->manifest(), ArrayId::kIndices)),
            0);
  ASSERT_TRUE(ShmDataset::Remove(name, other).ok());
  EXPECT_TRUE(SegmentExists(name, "meta"));  // the default instance's set is untouched
  EXPECT_FALSE(std::filesystem::exists(absl::StrCat("/dev/shm/", ShmSegmentName(other, name, "meta"))));
  EXPECT_EQ(ShmDataset::Remove(name, other).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ShmDataset::Remove(name, "bad.name").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(ShmDataset::Remove(name).ok());
}

TEST(ShmName, OnlySafeCharacters) {
  EXPECT_TRUE(ShmDataset::CheckName("ogbn-products_v2").ok());
  EXPECT_FALSE(ShmDataset::CheckName("").ok());
  EXPECT_FALSE(ShmDataset::CheckName("a/b").ok());
  EXPECT_FALSE(ShmDataset::CheckName("a.b").ok());
  EXPECT_FALSE(ShmDataset::CheckName(std::string(101, 'a')).ok());
}

// Segments another user could have made (or changed) are never trusted: attaching refuses them, loading
// replaces them.
void ForEachSegment(const std::string& name, const std::function<void(const std::string&)>& fn) {
  fn(absl::StrCat("/dev/shm/", ShmSegmentName(kDefaultInstance, name, "meta")));
  for (ArrayId id : kAllArrays) fn(absl::StrCat("/dev/shm/", ShmSegmentName(kDefaultInstance, name, ArrayName(id))));
}

TEST_F(ShmStore, SegmentsWritableByOthersAreRefusedThenReplaced) {
  const std::string name = UniqueName("writable");
  ASSERT_TRUE(ShmDataset::Load(name, *source_, {}).ok());
  ForEachSegment(name, [](const std::string& path) { ASSERT_EQ(::chmod(path.c_str(), 0666), 0) << path; });
  auto attached = ShmDataset::Attach(name);
  ASSERT_FALSE(attached.ok());
  EXPECT_EQ(attached.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(attached.status().message(), absl::StrCat(ShmSegmentName(kDefaultInstance, name, "meta"),
                                                      ": writable by group or others (mode 0666): refusing to use it"));
  EXPECT_TRUE(ShmDataset::Attach(name, /*any_owner=*/true).ok());  // gnnctl's read-only look is allowed
  auto reloaded = ShmDataset::Load(name, *source_, {});
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  ForEachSegment(name, [](const std::string& path) {
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << path;
  });
  EXPECT_TRUE(ShmDataset::Remove(name).ok());
}

TEST_F(ShmStore, AnotherUsersSegmentsAreRefusedThenReplaced) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give segments to another uid";
  const std::string name = UniqueName("foreign");
  ASSERT_TRUE(ShmDataset::Load(name, *source_, {}).ok());
  ForEachSegment(name, [](const std::string& path) { ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0) << path; });
  auto attached = ShmDataset::Attach(name);
  ASSERT_FALSE(attached.ok());
  EXPECT_EQ(attached.status().message(), absl::StrCat(ShmSegmentName(kDefaultInstance, name, "meta"),
                                                      ": owned by uid 65534, not by uid 0: refusing to use it"));
  auto reloaded = ShmDataset::Load(name, *source_, {});
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  ForEachSegment(name, [](const std::string& path) {
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u) << path;
  });
  EXPECT_TRUE(ShmDataset::Attach(name).ok());
  EXPECT_TRUE(ShmDataset::Remove(name).ok());
}

}  // namespace
}  // namespace gnnd
