// Latency histograms of the batch stages, per (stage, dataset, device), shared by every session and
// reported in Stats (gnnctl stats, the Prometheus endpoint). A session takes its cells once at open and
// observes without looking anything up.
#pragma once

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "gnnd/v1/service.pb.h"

namespace gnnd {

class StageHistograms {
 public:
  // Upper bounds in seconds, 50 µs to 10 s.
  static constexpr std::array<double, 17> kBounds = {50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
                                                     50e-3, 100e-3, 250e-3, 500e-3, 1.0,  2.5,    5.0,  10.0};

  class Cell {
   public:
    void Observe(double seconds);

   private:
    friend class StageHistograms;
    mutable std::mutex mutex_;
    std::array<uint64_t, kBounds.size() + 1> counts_{};
    double sum_ = 0;
    uint64_t count_ = 0;
  };

  // The cell for one stage of one dataset on one device; lives as long as this object.
  Cell& Get(const std::string& stage, const std::string& dataset, const std::string& device);
  void AppendTo(v1::Stats& stats) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, std::string>, Cell> cells_;
};

}  // namespace gnnd
