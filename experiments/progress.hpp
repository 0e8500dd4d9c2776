// A progress bar with an ETA on stderr, drawn only when stderr is a terminal and only once a run has
// lasted a couple of seconds (short runs and logs stay clean).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ternlab::experiments {

class Progress {
 public:
  // `total` units of work; `enabled` false keeps it silent (default: isatty(stderr)).
  explicit Progress(std::int64_t total, bool enabled);
  Progress(std::int64_t total);
  ~Progress();
  void add_total(std::int64_t more) { total_ += more; }
  void step(const std::string& what, std::int64_t units = 1);
  void finish();
  // "1:05" / "12s": used by the bar and by the plan's time estimate.
  static std::string format_seconds(double s);
  std::int64_t done() const { return done_; }

 private:
  void draw(const std::string& what);
  std::int64_t total_, done_ = 0;
  bool enabled_, drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace ternlab::experiments
