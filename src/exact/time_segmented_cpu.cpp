#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "core/error.hpp"
#include "exact/time_segmented.hpp"

namespace radstream {

TimeSegments make_time_segments(const std::vector<float>& t, int segments) {
  if (segments < 1 || segments > 64)
    throw ConfigError("time segments: " + std::to_string(segments) + " must be in 1..64");
  if (t.empty()) throw InputError("time segments: no sample times");
  for (std::size_t i = 0; i < t.size(); ++i)
    if (!std::isfinite(t[i])) throw InputError("time segments: t[" + std::to_string(i) + "] is not finite");
  const auto [lo, hi] = std::minmax_element(t.begin(), t.end());
  const std::size_t M = t.size(), L = std::size_t(segments);
  TimeSegments s;
  s.weights.assign(L * M, 0.0f);
  if (L == 1) {
    double mean = 0;
    for (float v : t) mean += v;
    s.times = {float(mean / double(M))};
    std::fill(s.weights.begin(), s.weights.end(), 1.0f);
    return s;
  }
  const double t0 = *lo, dt = (double(*hi) - t0) / double(L - 1);
  for (std::size_t l = 0; l < L; ++l) s.times.push_back(float(t0 + dt * double(l)));
  for (std::size_t m = 0; m < M; ++m) {
    if (dt <= 0) {
      s.weights[m] = 1.0f;
      continue;
    }
    const double u = (double(t[m]) - t0) / dt;
    const std::size_t l = std::min(L - 2, std::size_t(std::max(0.0, std::floor(u))));
    const double a = u - double(l);
    s.weights[l * M + m] = float(1.0 - a);
    s.weights[(l + 1) * M + m] = float(a);
  }
  return s;
}

std::vector<cfloat> segment_phasors(const std::vector<float>& fm, const std::vector<float>& times) {
  const std::size_t V = fm.size();
  std::vector<cfloat> e(times.size() * V);
  for (std::size_t l = 0; l < times.size(); ++l)
    for (std::size_t v = 0; v < V; ++v) {
      double p = double(fm[v]) * double(times[l]);
      p -= std::nearbyint(p);
      const double a = -2.0 * std::numbers::pi * p;
      e[l * V + v] = {float(std::cos(a)), float(std::sin(a))};
    }
  return e;
}

TimeSegmentedCpu::TimeSegmentedCpu(std::shared_ptr<LinearOperator> f, const std::vector<float>& fm,
                                   const std::vector<float>& t, int segments)
    : LinearOperator(f->domain(), f->codomain(), Location::Host),
      f_(std::move(f)),
      seg_(make_time_segments(t, segments)) {
  if (fm.size() != domain().size())
    throw InputError("time segments: " + std::to_string(fm.size()) + " field-map values for " +
                     std::to_string(domain().size()) + " voxels");
  if (t.empty() || codomain().size() % t.size() != 0)
    throw InputError("time segments: " + std::to_string(t.size()) + " times for " +
                     std::to_string(codomain().size()) +
                     " samples (one per sample, repeated for every coil)");
  tx_.resize(domain().size());
  ty_.resize(codomain().size());
  e_ = segment_phasors(fm, seg_.times);
}

void TimeSegmentedCpu::forward(const cfloat* x, cfloat* y) {
  const std::size_t V = tx_.size(), M = ty_.size();
  std::fill(y, y + M, cfloat{});
  for (std::size_t l = 0; l < seg_.times.size(); ++l) {
    const cfloat* e = e_.data() + l * V;
    for (std::size_t v = 0; v < V; ++v) tx_[v] = x[v] * e[v];
    f_->forward(tx_.data(), ty_.data());
    const std::size_t Mt = seg_.weights.size() / seg_.times.size();
    const float* b = seg_.weights.data() + l * Mt;
    for (std::size_t m = 0; m < M; ++m) y[m] += b[m % Mt] * ty_[m];
  }
}

void TimeSegmentedCpu::adjoint(const cfloat* y, cfloat* x) {
  const std::size_t V = tx_.size(), M = ty_.size();
  std::fill(x, x + V, cfloat{});
  for (std::size_t l = 0; l < seg_.times.size(); ++l) {
    const std::size_t Mt = seg_.weights.size() / seg_.times.size();
    const float* b = seg_.weights.data() + l * Mt;
    for (std::size_t m = 0; m < M; ++m) ty_[m] = b[m % Mt] * y[m];
    f_->adjoint(ty_.data(), tx_.data());
    const cfloat* e = e_.data() + l * V;
    for (std::size_t v = 0; v < V; ++v) x[v] += tx_[v] * std::conj(e[v]);
  }
}

}  // namespace radstream
