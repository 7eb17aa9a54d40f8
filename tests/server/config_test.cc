// gpu_cache: every accepted spelling, what `auto` leaves to trainers, and the errors for the rest; producer_sms's
// default and range.
#include "server/config.h"

#include "gtest/gtest.h"

namespace gnnd {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(GpuCache, ParsesBytesSharesAndAuto) {
  EXPECT_EQ(ParseGpuCache("20GiB")->For(80 * kGiB, 80 * kGiB), 20 * kGiB);
  EXPECT_EQ(ParseGpuCache("512MiB")->For(kGiB, kGiB), 512u << 20);
  EXPECT_EQ(ParseGpuCache("1000")->For(kGiB, kGiB), 1000u);
  EXPECT_EQ(ParseGpuCache("none")->For(kGiB, kGiB), 0u);
  EXPECT_EQ(ParseGpuCache("0")->For(kGiB, kGiB), 0u);
  EXPECT_EQ(ParseGpuCache("25%")->For(10 * kGiB, 80 * kGiB), 20 * kGiB);  // of the GPU, whatever is free
  // auto: a quarter of the GPU, but never leaving less than half of it free.
  for (const std::string value : {"", "auto"}) {
    auto cache = ParseGpuCache(value);
    ASSERT_TRUE(cache.ok()) << cache.status();
    EXPECT_EQ(cache->For(80 * kGiB, 80 * kGiB), 20 * kGiB);
    EXPECT_EQ(cache->For(50 * kGiB, 80 * kGiB), 10 * kGiB);
    EXPECT_EQ(cache->For(30 * kGiB, 80 * kGiB), 0u);
  }
}

TEST(GpuCache, RejectsOtherValuesNamingTheField) {
  for (const std::string value : {"-1", "20GB", "abc", "101%", "-5%", "GiB", "99999999999999TiB"}) {
    const absl::Status s = ParseGpuCache(value).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << value;
    EXPECT_NE(s.message().find("gpu_cache: '" + value + "'"), absl::string_view::npos) << s;
  }
  v1::DaemonConfig config;
  config.set_gpu_cache("lots");
  EXPECT_FALSE(FinishDaemonConfig(config).ok());
}

TEST(ProducerSms, AutoUnlessSetAndZeroStillMeansTheWholeGpu) {
  v1::DaemonConfig unset;
  ASSERT_TRUE(FinishDaemonConfig(unset).ok());
  EXPECT_EQ(unset.producer_sms(), -1);  // auto
  for (const int sms : {0, 8, -1}) {
    v1::DaemonConfig config;
    config.set_producer_sms(sms);
    ASSERT_TRUE(FinishDaemonConfig(config).ok()) << sms;
    EXPECT_EQ(config.producer_sms(), sms);
  }
  v1::DaemonConfig config;
  config.set_producer_sms(-2);
  const absl::Status s = FinishDaemonConfig(config);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("producer_sms: -2"), absl::string_view::npos) << s;
}

TEST(Producer, AutoUnlessSetAndOnlyTheNamesGnndKnows) {
  v1::DaemonConfig unset;
  ASSERT_TRUE(FinishDaemonConfig(unset).ok());
  EXPECT_EQ(unset.producer(), "auto");
  v1::DaemonConfig host;
  host.set_producer("host");
  ASSERT_TRUE(FinishDaemonConfig(host).ok());
  EXPECT_EQ(host.producer(), "host");
  v1::DaemonConfig config;
  config.set_producer("gpu");
  const absl::Status s = FinishDaemonConfig(config);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_EQ(s.message(), "producer = 'gpu' (sm, host_gather, host or auto)");
}

}  // namespace
}  // namespace gnnd
