// Command-line spelling: hyphens become underscores, and a repeatable flag's every occurrence is kept.
#include "common/base/flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace gnnd {
namespace {

struct Argv {
  explicit Argv(std::vector<std::string> args) : strings(std::move(args)) {
    for (std::string& s : strings) pointers.push_back(s.data());
  }
  std::vector<std::string> strings;
  std::vector<char*> pointers;
  std::vector<std::string> Rest(int argc) const { return {pointers.begin(), pointers.begin() + argc}; }
};

TEST(Flags, RepeatedFlagKeepsEveryOccurrenceInOrder) {
  Argv a({"gnnctl", "import", "--edge-attr", "w=w.npy", "--format", "edgelist", "--edge-attr=f=f.npy", "in", "out",
          "--edge-attr", "--", "--edge-attr", "x=y"});
  int argc = static_cast<int>(a.pointers.size());
  NormalizeFlagNames(argc, a.pointers.data());
  EXPECT_EQ(TakeRepeatedFlag(argc, a.pointers.data(), "edge_attr"),
            (std::vector<std::string>{"w=w.npy", "f=f.npy", ""}));
  // Other flags, positional arguments and everything after "--" stay, in order.
  EXPECT_EQ(a.Rest(argc), (std::vector<std::string>{"gnnctl", "import", "--format", "edgelist", "in", "out", "--",
                                                    "--edge-attr", "x=y"}));
}

TEST(Flags, BareRepeatedFlagTakesNoPositionalArgument) {
  Argv a({"gnnctl", "generate", "--edge-attr", "out", "--edge-attr", "--preset=tiny"});
  int argc = static_cast<int>(a.pointers.size());
  NormalizeFlagNames(argc, a.pointers.data());
  EXPECT_EQ(TakeRepeatedFlag(argc, a.pointers.data(), "edge_attr"), (std::vector<std::string>{"", ""}));
  EXPECT_EQ(a.Rest(argc), (std::vector<std::string>{"gnnctl", "generate", "out", "--preset=tiny"}));
}

TEST(Flags, AFlagThatTakesAValueTakesTheNextArgument) {
  Argv a(
      {"gnnctl", "import", "--node-time", "t.npy", "--node-time=paper=p.npy", "in", "--node-time", "a=b.npy", "out"});
  int argc = static_cast<int>(a.pointers.size());
  NormalizeFlagNames(argc, a.pointers.data());
  EXPECT_EQ(TakeRepeatedFlag(argc, a.pointers.data(), "node_time", /*takes_value=*/true),
            (std::vector<std::string>{"t.npy", "paper=p.npy", "a=b.npy"}));
  EXPECT_EQ(a.Rest(argc), (std::vector<std::string>{"gnnctl", "import", "in", "out"}));
}

}  // namespace
}  // namespace gnnd
