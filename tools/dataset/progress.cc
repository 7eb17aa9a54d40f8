#include "tools/dataset/progress.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_format.h"

namespace gnnd::dataset {
namespace {
std::string Human(double n) {
  if (n >= 1e9) return absl::StrFormat("%.2fG", n / 1e9);
  if (n >= 1e6) return absl::StrFormat("%.1fM", n / 1e6);
  if (n >= 1e3) return absl::StrFormat("%.1fK", n / 1e3);
  return absl::StrFormat("%.0f", n);
}
}  // namespace

Progress::Progress(std::string label, int64_t total, std::string unit)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), tty_(::isatty(STDERR_FILENO)) {
  start_ = last_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { Finish(); }

void Progress::Set(int64_t done) {
  done_ = done;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ >= (tty_ ? std::chrono::milliseconds(250) : std::chrono::seconds(10))) {
    last_ = now;
    Print(false);
  }
}

void Progress::Finish() {
  if (finished_) return;
  finished_ = true;
  Print(true);
}

void Progress::Print(bool final) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = absl::StrFormat("%s: %s", label_, Human(done_));
  if (total_ > 0) line += absl::StrFormat("/%s (%.0f%%)", Human(total_), 100.0 * done_ / total_);
  line += absl::StrFormat(" %s, %.1fs, %s/s", unit_, seconds, Human(seconds > 0 ? done_ / seconds : 0));
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace gnnd::dataset
