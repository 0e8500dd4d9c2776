#include "experiments/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "common/error.hpp"

namespace ternlab::experiments {

namespace {
constexpr double kQuietSeconds = 2.0;  // runs shorter than this never draw
constexpr int kWidth = 30;
}  // namespace

Progress::Progress(std::int64_t total, bool enabled)
    : total_(total), enabled_(enabled), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

Progress::Progress(std::int64_t total) : Progress(total, isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() { finish(); }

std::string Progress::format_seconds(double s) {
  const auto t = std::int64_t(s + 0.5);
  if (t < 60) return cat(t, "s");
  const std::int64_t m = t / 60, r = t % 60;
  if (m < 60) return cat(m, ":", r < 10 ? "0" : "", r);
  return cat(m / 60, "h", (m % 60) < 10 ? "0" : "", m % 60);
}

void Progress::step(const std::string& what, std::int64_t units) {
  done_ += units;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed < kQuietSeconds || std::chrono::duration<double>(now - last_draw_).count() < 0.1) return;
  last_draw_ = now;
  draw(what);
}

void Progress::draw(const std::string& what) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double frac = total_ > 0 ? std::min(1.0, double(done_) / double(total_)) : 1.0;
  const int fill = int(frac * kWidth);
  std::string bar(std::size_t(fill), '#');
  bar += std::string(std::size_t(kWidth - fill), '.');
  const std::string eta = frac > 0 ? format_seconds(elapsed / frac - elapsed) : "?";
  std::fprintf(stderr, "\r[%s] %3d%%  %s elapsed, ETA %s  %-32.32s", bar.c_str(), int(frac * 100 + 0.5),
               format_seconds(elapsed).c_str(), eta.c_str(), what.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r%*s\r", kWidth + 90, "");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace ternlab::experiments
