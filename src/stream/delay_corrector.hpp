// Gradient-delay correction of a stream's spokes at the ingest (noncart/gradient_delay.hpp): every spoke's
// trajectory is moved along itself by the delays before it enters the spoke ring, so gridding and every
// iterative method see the corrected trajectory. `off`; fixed delays `A:B:C` (BART's traj -q x:y:xy, in
// samples); or `auto`: RING estimates them on a background thread from the stream's latest 64 spokes, first
// when 64 have come and again every `every` frames (a frame is due every `stride` spokes); spokes before the
// first estimate stay uncorrected. A new stream starts afresh.
#pragma once
#include <atomic>
#include <cstdint>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "noncart/gradient_delay.hpp"

namespace radstream {

struct Metrics;

class DelayCorrector {
 public:
  // `mode`: off, auto or A:B:C (ConfigError naming it otherwise).
  DelayCorrector(const std::string& mode, long every, Metrics& metrics);
  ~DelayCorrector();
  DelayCorrector(const DelayCorrector&) = delete;
  DelayCorrector& operator=(const DelayCorrector&) = delete;

  bool active() const { return auto_ || fixed_; }
  // The stream's stride (spokes per frame); `every` counts frames of it. Set at start and when it changes.
  void set_stride(int stride) { stride_ = stride > 0 ? stride : 1; }
  void new_stream(int samples, int coils);
  // Corrects one spoke's trajectory [samples][2] in place (data [coils][samples] feeds the estimate).
  void correct(float* traj, const cfloat* data);

  static constexpr int kSpokesPerEstimate = 64;

 private:
  void publish(const GradientDelays& d);  // on the estimating thread
  bool auto_ = false, fixed_ = false;
  long every_;                   // frames between two estimates
  std::atomic<int> stride_{16};  // spokes per frame
  Metrics& metrics_;
  std::mutex m_;  // guards current_ (the estimating thread sets it)
  GradientDelays current_;
  int samples_ = 0, coils_ = 0;
  std::vector<float> traj_;   // the latest spokes, uncorrected: [kSpokesPerEstimate][samples][2]
  std::vector<cfloat> data_;  // [kSpokesPerEstimate][coils][samples]
  std::uint64_t seen_ = 0;
  bool due_waiting_ = false;  // an estimate came due while the last one still ran
  std::future<void> pending_;
};

}  // namespace radstream
