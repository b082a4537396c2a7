#include "stream/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

namespace radstream {

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void sleep_until_ns(std::int64_t t) {
  timespec ts{time_t(t / 1000000000), long(t % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

void LatencySeries::add(double ms) {
  std::lock_guard lock(m_);
  if (seen_++ < skip_) return;
  v_.push_back(ms);
  if (v_.size() > kWindow) v_.pop_front();
}

Percentiles LatencySeries::summary() const {
  std::vector<double> v;
  {
    std::lock_guard lock(m_);
    v.assign(v_.begin(), v_.end());
  }
  Percentiles p;
  p.count = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, std::size_t(q * double(v.size() - 1) + 0.5))]; };
  p.p50 = at(0.5);
  p.p95 = at(0.95);
  p.p99 = at(0.99);
  p.max = v.back();
  return p;
}

Metrics::Metrics() {
  for (auto& r : rejected) r = 0;
}

void Metrics::add_stage(const std::string& stage, double ms) {
  LatencySeries* s;
  {
    std::lock_guard lock(m_);
    s = &stages_.try_emplace(stage).first->second;  // std::map nodes do not move
  }
  s->add(ms);
}

void Metrics::add_solver(int iterations, double residual) {
  solver_iterations.add(iterations);
  solver_residual.add(residual);
  last_iterations = iterations;
  last_residual = residual;
}

std::vector<std::pair<std::string, Percentiles>> Metrics::stage_summaries() const {
  std::vector<std::pair<std::string, Percentiles>> out;
  std::lock_guard lock(m_);
  for (const auto& [name, s] : stages_) out.emplace_back(name, s.summary());
  return out;
}

std::uint64_t Metrics::rejected_total() const {
  std::uint64_t n = 0;
  for (const auto& r : rejected) n += r.load();
  return n;
}

std::string Metrics::line(double t) {
  const std::uint64_t f = frames.load(), s = spokes.load();
  const double dt = std::max(1e-9, t - prev_t_);
  const double fps = double(f - prev_frames_) / dt, sps = double(s - prev_spokes_) / dt;
  prev_frames_ = f;
  prev_spokes_ = s;
  prev_t_ = t;
  const auto e2e = end_to_end.summary();
  const std::int64_t last = last_message_ns.load();
  const double age = last ? double(monotonic_ns() - last) * 1e-9 : -1.0;
  std::string bad;
  for (int r = 0; r < wire::kRejectCount; ++r)
    if (rejected[r])
      bad += fmt::format("{}{}={}", bad.empty() ? "" : ",", wire::to_string(wire::Reject(r)),
                         rejected[r].load());
  return fmt::format(
      "t={:.0f}s fps={:.1f} spokes/s={:.0f} spokes={} frames={} skipped={} failed={} missing={} gaps={} "
      "bad={}{}{}{} e2e_ms p50={:.2f} p99={:.2f} max={:.2f} last_msg_age={}",
      t, fps, sps, s, f, frames_skipped.load(), frames_failed.load(), missing.load(), gaps.load(),
      rejected_total(), bad.empty() ? "" : "(" + bad + ")",
      record_failures ? fmt::format(" RECORD_FAILED={}", record_failures.load()) : std::string(),
      last_iterations >= 0 ? fmt::format(" cg_iter={} cg_res={:.2g}", last_iterations.load(), last_residual.load())
                           : std::string(),
      e2e.p50, e2e.p99, e2e.max,
      age < 0 ? std::string("none") : fmt::format("{:.2f}s", age));
}

nlohmann::ordered_json to_json(const Percentiles& p) {
  return {{"count", p.count}, {"p50", p.p50}, {"p95", p.p95}, {"p99", p.p99}, {"max", p.max}};
}

nlohmann::ordered_json Metrics::to_json(double t) const {
  nlohmann::ordered_json rej = nlohmann::ordered_json::object();
  for (int r = 0; r < wire::kRejectCount; ++r) rej[wire::to_string(wire::Reject(r))] = rejected[r].load();
  nlohmann::ordered_json st = nlohmann::ordered_json::object();
  for (const auto& [name, p] : stage_summaries()) st[name] = radstream::to_json(p);
  nlohmann::ordered_json j;
  j["elapsed_s"] = t;
  j["messages"] = messages.load();
  j["spokes"] = spokes.load();
  j["bytes"] = bytes.load();
  j["spokes_per_s"] = t > 0 ? double(spokes.load()) / t : 0.0;
  j["frames"] = frames.load();
  j["frames_per_s"] = t > 0 ? double(frames.load()) / t : 0.0;
  j["frames_skipped"] = frames_skipped.load();
  j["frames_failed"] = frames_failed.load();
  j["headers"] = headers.load();
  j["heartbeats"] = heartbeats.load();
  j["closes"] = closes.load();
  j["streams"] = streams.load();
  j["reconfigurations"] = reconfigurations.load();
  j["missing"] = missing.load();
  j["gaps"] = gaps.load();
  j["rejected"] = rej;
  j["recorded"] = recorded.load();
  j["recorder_waits"] = recorder_waits.load();
  j["record_failures"] = record_failures.load();
  j["published"] = published.load();
  j["images_written"] = images_written.load();
  j["sink_dropped"] = sink_dropped.load();
  j["latency_ms"] = {{"end_to_end", radstream::to_json(end_to_end.summary())},
                     {"arrival_to_ready", radstream::to_json(arrival.summary())},
                     {"stages", st}};
  if (last_iterations >= 0)
    j["solver"] = {{"iterations", radstream::to_json(solver_iterations.summary())},
                   {"residual", radstream::to_json(solver_residual.summary())},
                   {"deadline_misses", deadline_misses.load()}};
  return j;
}

}  // namespace radstream
