// Progress of a long import or generation on stderr: a self-updating line on a terminal, a line every
// ten seconds otherwise (logs stay readable).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gnnd::dataset {

class Progress {
 public:
  // `total` 0 means unknown; `unit` names what is counted ("edges", "rows", "bytes").
  Progress(std::string label, int64_t total, std::string unit);
  ~Progress();
  void Add(int64_t n) { Set(done_ + n); }
  void Set(int64_t done);
  // Prints the final line (once).
  void Finish();

 private:
  void Print(bool final);
  std::string label_, unit_;
  int64_t total_, done_ = 0;
  bool tty_, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace gnnd::dataset
