#include "stream/delay_corrector.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.hpp"
#include "core/log.hpp"
#include "stream/metrics.hpp"

namespace radstream {

DelayCorrector::DelayCorrector(const std::string& mode, long every, Metrics& metrics)
    : every_(std::max(1L, every)), metrics_(metrics) {
  if (mode == "auto") {
    auto_ = true;
  } else if (mode != "off" && !mode.empty()) {
    current_ = parse_gradient_delays(mode, "stream.gradient_delay");
    fixed_ = true;
    metrics_.delay_x = current_.x;
    metrics_.delay_y = current_.y;
    metrics_.delay_xy = current_.xy;
  }
}

DelayCorrector::~DelayCorrector() {
  if (pending_.valid()) pending_.wait();
}

void DelayCorrector::new_stream(int samples, int coils) {
  samples_ = samples;
  coils_ = coils;
  if (!auto_) return;
  if (pending_.valid()) pending_.wait();
  pending_ = {};
  seen_ = 0;
  due_waiting_ = false;
  {
    std::lock_guard l(m_);
    current_ = {};
  }
  traj_.assign(std::size_t(kSpokesPerEstimate) * samples * 2, 0.f);
  data_.assign(std::size_t(kSpokesPerEstimate) * coils * samples, cfloat(0));
}

void DelayCorrector::publish(const GradientDelays& d) {
  {
    std::lock_guard l(m_);
    current_ = d;
  }
  ++metrics_.delay_estimates;
  metrics_.delay_x = d.x;
  metrics_.delay_y = d.y;
  metrics_.delay_xy = d.xy;
  if (metrics_.delay_estimates.load() <= 3)
    log::info("ingest: gradient delays estimated by RING: {} (samples; BART's traj -q order)", d.str());
}

void DelayCorrector::correct(float* traj, const cfloat* data) {
  if (auto_ && samples_ > 0) {
    const std::size_t slot = std::size_t(seen_ % kSpokesPerEstimate);
    std::memcpy(traj_.data() + slot * samples_ * 2, traj, sizeof(float) * 2 * std::size_t(samples_));
    std::memcpy(data_.data() + slot * std::size_t(coils_) * samples_, data,
                sizeof(cfloat) * std::size_t(coils_) * samples_);
    ++seen_;
    const bool idle =
        !pending_.valid() || pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    const std::uint64_t period = std::uint64_t(every_) * std::uint64_t(stride_.load());  // spokes
    const bool due =
        seen_ == std::uint64_t(kSpokesPerEstimate) ||
        (seen_ > std::uint64_t(kSpokesPerEstimate) && (seen_ - kSpokesPerEstimate) % period == 0);
    due_waiting_ = due_waiting_ || due;  // a due estimate waits for the one still running, never lost
    if (due_waiting_ && idle) {
      due_waiting_ = false;
      // RING takes [spokes][samples][2] and [coils][spokes][samples]: a copy in that order, estimated aside.
      const int P = kSpokesPerEstimate, S = samples_, C = coils_;
      std::vector<cfloat> by_coil(data_.size());
      for (int p = 0; p < P; ++p)
        for (int c = 0; c < C; ++c)
          std::memcpy(by_coil.data() + (std::size_t(c) * P + p) * S,
                      data_.data() + (std::size_t(p) * C + c) * S, sizeof(cfloat) * S);
      // Estimated aside; the result is taken by the spokes that come after it (and counted at once).
      pending_ = std::async(std::launch::async, [this, t = traj_, d = std::move(by_coil), S, P, C] {
        try {
          publish(estimate_delays_ring(t, d, S, P, C));
        } catch (const std::exception& e) {
          if (++metrics_.delay_failures == 1)
            log::warn("ingest: gradient-delay estimate failed ({}); the last delays stay", e.what());
        }
      });
    }
  }
  if (samples_ >= 2 && (auto_ || fixed_)) {
    GradientDelays d;
    {
      std::lock_guard l(m_);
      d = current_;
    }
    apply_gradient_delays(std::span<float>(traj, 2 * std::size_t(samples_)), samples_, 1, d);
  }
}

}  // namespace radstream
