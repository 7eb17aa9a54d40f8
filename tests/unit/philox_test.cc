#include "common/base/philox.h"

#include <set>

#include "gtest/gtest.h"

namespace gnnd {
namespace {

// Known-answer vectors of Random123 (kat_vectors: counter, key -> output).
TEST(Philox, MatchesPublishedKnownAnswers) {
  struct Case {
    Philox4x32 counter;
    uint32_t key0, key1;
    Philox4x32 expected;
  } cases[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Case& c : cases) {
    const Philox4x32 out = Philox4x32_10(c.counter, c.key0, c.key1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out.v[i], c.expected.v[i]) << "word " << i;
  }
}

TEST(Philox, StreamsAndSeedsGiveDistinctWords) {
  std::set<uint32_t> words;
  for (uint32_t stream = 0; stream < 4; ++stream) {
    for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 32}) {
      for (uint64_t index : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 32})
        words.insert(RandomWords(seed, stream, index).v[0]);
    }
  }
  EXPECT_EQ(words.size(), 4u * 3 * 3);
}

TEST(Philox, UniformsStayInRange) {
  EXPECT_EQ(UniformFloat(0), 0.0f);
  EXPECT_LT(UniformFloat(0xffffffffu), 1.0f);
  EXPECT_LT(UniformDouble(0xffffffffu, 0xffffffffu), 1.0);
  EXPECT_GE(UniformDouble(0, 0), 0.0);
}

}  // namespace
}  // namespace gnnd
