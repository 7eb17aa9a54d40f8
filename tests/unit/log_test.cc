#include "common/base/log.h"

#include "gtest/gtest.h"

namespace gnnd {
namespace {

TEST(Logfmt, PlainValuesStayBare) {
  EXPECT_EQ(LogfmtValue("products"), "products");
  EXPECT_EQ(LogfmtValue("cuda:0"), "cuda:0");
  EXPECT_EQ(LogfmtValue("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 is text
}

TEST(Logfmt, EveryControlByteIsEscapedSoAValueCannotStartALine) {
  EXPECT_EQ(LogfmtValue(""), "\"\"");
  EXPECT_EQ(LogfmtValue("a b"), "\"a b\"");
  EXPECT_EQ(LogfmtValue("k=v"), "\"k=v\"");
  EXPECT_EQ(LogfmtValue("say \"hi\" \\ bye"), "\"say \\\"hi\\\" \\\\ bye\"");
  EXPECT_EQ(LogfmtValue("x\r\ntime=0 level=error"), "\"x\\r\\ntime=0 level=error\"");
  EXPECT_EQ(LogfmtValue("tab\there"), "\"tab\\there\"");
  EXPECT_EQ(LogfmtValue(std::string("nul\0esc\x1b del\x7f", 13)), "\"nul\\x00esc\\x1b del\\x7f\"");
  for (int c = 0; c < 0x20; ++c) {
    const std::string value = LogfmtValue(std::string(1, static_cast<char>(c)));
    for (char out : value) EXPECT_GE(static_cast<unsigned char>(out), 0x20) << "byte " << c;
  }
}

}  // namespace
}  // namespace gnnd
