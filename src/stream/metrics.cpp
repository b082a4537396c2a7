#include "stream/metrics.hpp"

#include <cstring>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <ctime>

namespace radstream {

namespace {

std::size_t latency_bin(double ms) {
  using L = LatencySeries;
  if (!(ms >= std::pow(10.0, L::kLowDecade))) return 0;  // also NaN
  const double b = (std::log10(ms) - L::kLowDecade) * L::kBinsPerDecade;
  return b >= double(L::kBins - 2) ? L::kBins - 1 : 1 + std::size_t(b);
}

double latency_bin_centre(std::size_t bin) {
  using L = LatencySeries;
  return std::pow(10.0, L::kLowDecade + (double(bin) - 0.5) / L::kBinsPerDecade);
}

}  // namespace

void LatencySeries::add(double ms) {
  std::lock_guard lock(m_);
  if (seen_++ < skip_) return;
  if (count_ == 0 || ms < min_) min_ = ms;
  if (count_ == 0 || ms > max_) max_ = ms;
  ++count_;
  ++bins_[latency_bin(ms)];
}

void LatencySeries::merge(const LatencySeries& o) {
  if (&o == this) return;
  std::scoped_lock lock(m_, o.m_);
  if (o.count_ == 0) return;
  min_ = count_ == 0 ? o.min_ : std::min(min_, o.min_);
  max_ = count_ == 0 ? o.max_ : std::max(max_, o.max_);
  count_ += o.count_;
  for (std::size_t i = 0; i < kBins; ++i) bins_[i] += o.bins_[i];
}

Percentiles percentiles_of(std::vector<double> v) {
  Percentiles p;
  p.count = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, std::size_t(q * double(v.size() - 1) + 0.5))]; };
  p.p50 = at(0.5);
  p.p95 = at(0.95);
  p.p99 = at(0.99);
  p.p999 = at(0.999);
  p.max = v.back();
  return p;
}

Percentiles LatencySeries::summary() const {
  std::lock_guard lock(m_);
  Percentiles p;
  p.count = count_;
  if (count_ == 0) return p;
  // The value of rank k (0-based, as percentiles_of picks it) lies in the bin where the running count passes
  // k.
  auto at = [&](double q) {
    const auto k = std::min(count_ - 1, std::size_t(q * double(count_ - 1) + 0.5));
    std::size_t below = 0;
    for (std::size_t b = 0; b < kBins; ++b) {
      below += bins_[b];
      if (below > k) return std::clamp(latency_bin_centre(b), min_, max_);
    }
    return max_;
  };
  p.p50 = at(0.5);
  p.p95 = at(0.95);
  p.p99 = at(0.99);
  p.p999 = at(0.999);
  p.max = max_;
  return p;
}

void RecentSeries::prune(std::int64_t now) const {
  while (!v_.empty() && now - v_.front().first > window_ns_) v_.pop_front();
}

void RecentSeries::add(double ms, std::int64_t now) {
  std::lock_guard lock(m_);
  v_.emplace_back(now, ms);
  prune(now);
}

Percentiles RecentSeries::summary(std::int64_t now) const {
  std::vector<double> v;
  {
    std::lock_guard lock(m_);
    prune(now);
    for (const auto& e : v_) v.push_back(e.second);
  }
  return percentiles_of(std::move(v));
}

double RecentSeries::sum(std::int64_t now) const {
  std::lock_guard lock(m_);
  prune(now);
  double total = 0;
  for (const auto& e : v_) total += e.second;
  return total;
}

void Metrics::add_frame_latency(std::int64_t acquired, std::int64_t arrived, std::int64_t ready, int s) {
  const std::int64_t now = monotonic_ns();
  SliceMetrics& sm = slice(s);
  ++sm.frames;
  if (arrived <= 0 || ready < arrived) return;  // no arrival time for the window: nothing honest to add
  arrival.add(double(ready - arrived) * 1e-6);
  sm.arrival.add(double(ready - arrived) * 1e-6);
  pipeline_recent.add(double(ready - arrived) * 1e-6, now);
  if (acquired <= 0) return;    // the sender gave no acquisition time
  if (recorded_clock.load()) {  // a recording's times: no latency of this session
    ++recorded_clock_frames;
    return;
  }
  if (!sender_clock_plausible(acquired, arrived)) {
    ++clock_invalid;  // a forged or foreign clock: counted, never averaged into the latency figures
    return;
  }
  end_to_end.add(double(ready - acquired) * 1e-6);
  sm.end_to_end.add(double(ready - acquired) * 1e-6);
  const double lag = double(arrived - acquired) * 1e-6;
  sender_lag.add(lag);
  lag_recent.add(lag, now);
}

void Metrics::add_skipped(std::uint64_t n) {
  frames_skipped += n;
  if (n) skipped_recent.add(double(n), monotonic_ns());
}

Metrics::Metrics() {
  for (auto& r : rejected) r = 0;
}

void Metrics::add_glass(double ms) {
  glass.add(ms);
  glass_recent.add(ms, monotonic_ns());
  add_stage("to_glass", ms);
}

void Metrics::add_stage(const std::string& stage, double ms) {
  LatencySeries* s;
  {
    std::lock_guard lock(m_);
    s = &stages_.try_emplace(stage).first->second;  // std::map nodes do not move
  }
  s->add(ms);
}

void Metrics::add_solver(int iterations, double residual, double ms, double deadline_ms) {
  solver_iterations.add(iterations);
  solver_residual.add(residual);
  if (ms > 0) solver_ms.add(ms);
  if (deadline_ms > 0 && ms > deadline_ms) {
    ++deadline_misses;
    deadline_overrun_ms.add(ms - deadline_ms);
    const std::int64_t now = monotonic_ns();
    std::lock_guard lock(m_);
    if (miss_log_.size() < kMissLog) miss_log_.push_back({now, ms, deadline_reserve_ms.load()});
  }
  last_iterations = iterations;
  last_residual = residual;
}

std::vector<DeadlineMiss> Metrics::deadline_miss_log() const {
  std::lock_guard lock(m_);
  return miss_log_;
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
  const std::int64_t now = monotonic_ns();
  const auto pipe = pipeline_recent.summary(now), lag = lag_recent.summary(now);
  const double behind = skipped_recent.sum(now);
  const std::int64_t last = last_message_ns.load();
  const double age = last ? double(now - last) * 1e-9 : -1.0;
  std::string bad;
  for (int r = 0; r < wire::kRejectCount; ++r)
    if (rejected[r])
      bad += fmt::format("{}{}={}", bad.empty() ? "" : ",", wire::to_string(wire::Reject(r)),
                         rejected[r].load());
  // One line, ~90 columns in the usual case: rates, counts, then over the last 10 s the pipeline's latency
  // (arrived -> ready) and the sender's lag (acquired -> arrived), p50/p99 in ms; flags only when they apply.
  std::string line = fmt::format(
      "t={:.0f}s fps={:.1f} sps={:.0f} spokes={} frames={} skip={} fail={} miss={} bad={}{} "
      "pipe={:.1f}/{:.1f}ms lag={}",
      t, fps, sps, s, f, frames_skipped.load(), frames_failed.load(), missing.load(), rejected_total(),
      bad.empty() ? "" : "(" + bad + ")", pipe.p50, pipe.p99,
      recorded_clock.load() ? std::string("n/a (recorded timestamps; replay --restamp)")
                            : fmt::format("{:.1f}/{:.1f}ms", lag.p50, lag.p99));
  const auto glass_now = glass_recent.summary(now);
  if (glass_now.count > 0) line += fmt::format(" glass={:.0f}/{:.0f}ms", glass_now.p50, glass_now.p99);
  if (gaps) line += fmt::format(" gaps={}", gaps.load());
  if (const auto still = frame_gaps.count()) line += fmt::format(" frame_gaps={}", still);
  if (behind > 0) line += fmt::format(" BEHIND({:.0f} skipped/10s)", behind);
  if (last_iterations >= 0)
    line += fmt::format(" cg={}/{:.1g}", last_iterations.load(), last_residual.load());
  if (record_failures) line += fmt::format(" RECORD_FAILED={}", record_failures.load());
  if (clock_invalid) line += fmt::format(" CLOCK_INVALID={}", clock_invalid.load());
  if (auth_denied) line += fmt::format(" AUTH_DENIED={}", auth_denied.load());
  if (const auto refused = peers.refused_total + peers.refused_address + publish_peers.refused_total +
                           publish_peers.refused_address)
    line += fmt::format(" CONNECTIONS_REFUSED={}", refused);
  if (slice_count > 1) {  // frames per slice (a failing slice shows FAILED with its count)
    line += " slices=";
    for (int k = 0; k < slice_count; ++k) {
      line += fmt::format("{}{}", k ? "/" : "", slice(k).frames.load());
      if (slice(k).frames_failed) line += fmt::format("(FAILED {})", slice(k).frames_failed.load());
    }
  }
  if (sender_lost) line += " SENDER_LOST";
  if (stream_ended) line += " ENDED";
  if (age > 2.0) line += fmt::format(" last_msg={:.0f}s_ago", age);
  return line;
}

nlohmann::ordered_json to_json(const Percentiles& p) {
  return {{"count", p.count}, {"p50", p.p50},    {"p95", p.p95},
          {"p99", p.p99},     {"p99.9", p.p999}, {"max", p.max}};
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
  j["clock_invalid"] = clock_invalid.load();
  j["recorded_clock_frames"] = recorded_clock_frames.load();
  j["frames_failed"] = frames_failed.load();
  j["volume_spokes_missing"] = volume_spokes_missing.load();
  j["headers"] = headers.load();
  j["heartbeats"] = heartbeats.load();
  j["closes"] = closes.load();
  j["streams"] = streams.load();
  j["reconfigurations"] = reconfigurations.load();
  j["held_before_header"] = held_before_header.load();
  j["noise_spokes"] = noise_spokes.load();
  j["non_imaging"] = non_imaging.load();
  j["missing"] = missing.load();
  j["gaps"] = gaps.load();
  j["frame_gaps"] = frame_gaps.to_json();
  j["slowest_frames"] = slowest_frames.to_json();
  const auto connections = [](const ConnectionCounts& c) {
    return nlohmann::ordered_json{{"connected", c.connected.load()},
                                  {"disconnected", c.disconnected.load()},
                                  {"open", c.open.load()},
                                  {"handshake_failures", c.handshake_failed.load()},
                                  {"refused_over_limit", c.refused_total.load()},
                                  {"refused_per_address", c.refused_address.load()}};
  };
  j["peers"] = connections(peers);
  j["peers"]["auth_denied"] = auth_denied.load();
  j["publish_peers"] = connections(publish_peers);
  j["rejected"] = rej;
  j["recorded"] = recorded.load();
  j["recorder_waits"] = recorder_waits.load();
  j["record_failures"] = record_failures.load();
  j["published"] = published.load();
  j["subscriptions"] = subscriptions.load();
  j["publisher_resets"] = publisher_resets.load();
  j["images_written"] = images_written.load();
  j["sink_dropped"] = sink_dropped.load();
  j["latency_ms"] = {{"end_to_end", radstream::to_json(end_to_end.summary())},
                     {"arrival_to_ready", radstream::to_json(arrival.summary())},
                     {"sender_lag", radstream::to_json(sender_lag.summary())},
                     {"arrival_to_published", radstream::to_json(published_latency.summary())},
                     {"ready_to_published", radstream::to_json(published_after_ready.summary())},
                     {"acquired_to_glass", radstream::to_json(glass.summary())},
                     {"stages", st}};
  if (slice_count > 1) {
    nlohmann::ordered_json sl = nlohmann::ordered_json::array();
    for (int s = 0; s < slice_count; ++s)
      sl.push_back({{"slice", s},
                    {"frames", slice(s).frames.load()},
                    {"frames_failed", slice(s).frames_failed.load()},
                    {"latency_ms",
                     {{"end_to_end", radstream::to_json(slice(s).end_to_end.summary())},
                      {"arrival_to_ready", radstream::to_json(slice(s).arrival.summary())}}}});
    j["slices"] = sl;
  }
  if (delay_estimates.load() > 0 || delay_x.load() != 0 || delay_y.load() != 0 || delay_xy.load() != 0)
    j["gradient_delay"] = {{"x", delay_x.load()},
                           {"y", delay_y.load()},
                           {"xy", delay_xy.load()},
                           {"estimates", delay_estimates.load()},
                           {"failures", delay_failures.load()}};
  if (mrd.on) {
    static constexpr const char* kFaults[] = {"unknown_id", "too_long", "truncated", "compressed",
                                              "bad_field",  "timeout",  "io"};
    nlohmann::ordered_json f;
    for (std::size_t i = 0; i < mrd.faults.size(); ++i) f[kFaults[i]] = mrd.faults[i].load();
    j["mrd"] = {{"sessions", mrd.sessions.load()},
                {"sessions_admitted", mrd.sessions_admitted.load()},
                {"sessions_completed", mrd.sessions_completed.load()},
                {"sessions_failed", mrd.sessions_failed.load()},
                {"sessions_refused", mrd.sessions_refused.load()},
                {"busy_refused", mrd.busy_refused.load()},
                {"address_refused", mrd.address_refused.load()},
                {"messages", mrd.messages.load()},
                {"acquisitions", mrd.acquisitions.load()},
                {"non_imaging", mrd.non_imaging.load()},
                {"noise", mrd.noise.load()},
                {"waveforms", mrd.waveforms.load()},
                {"client_images", mrd.client_images.load()},
                {"ndarrays", mrd.ndarrays.load()},
                {"texts", mrd.texts.load()},
                {"queries", mrd.queries.load()},
                {"images_sent", mrd.images_sent.load()},
                {"images_dropped", mrd.images_dropped.load()},
                {"faults", f},
                {"arrival_to_sent_ms", radstream::to_json(mrd.arrival_to_sent.summary())},
                {"ready_to_sent_ms", radstream::to_json(mrd.ready_to_sent.summary())},
                {"each_session", mrd.session_summaries()}};
  }
  if (last_iterations >= 0)
    j["solver"] = {{"iterations", radstream::to_json(solver_iterations.summary())},
                   {"residual", radstream::to_json(solver_residual.summary())},
                   {"solve_ms", radstream::to_json(solver_ms.summary())},
                   {"deadline_misses", deadline_misses.load()},
                   {"deadline_overrun_ms", radstream::to_json(deadline_overrun_ms.summary())},
                   {"deadline_early_stops", deadline_stops.load()},
                   {"deadline_reserve_ms", deadline_reserve_ms.load()},
                   {"deadline_reserve_max_ms", deadline_reserve_max_ms.load()}};
  return j;
}

void Metrics::Mrd::SessionSummary::put_text(char* to, std::size_t n, const std::string& s) {
  const std::size_t k = std::min(n - 1, s.size());
  std::memcpy(to, s.data(), k);
  to[k] = '\0';
}

void Metrics::Mrd::add_session(const SessionSummary& summary) {
  std::lock_guard lock(sessions_m_);
  if (sessions_.empty()) sessions_.resize(kMaxSessionSummaries);
  sessions_[next_session_] = summary;
  next_session_ = (next_session_ + 1) % kMaxSessionSummaries;
  summaries_ = std::min(summaries_ + 1, kMaxSessionSummaries);
}

nlohmann::ordered_json Metrics::Mrd::session_summaries() const {
  std::lock_guard lock(sessions_m_);
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  const std::size_t first = (next_session_ + kMaxSessionSummaries - summaries_) % kMaxSessionSummaries;
  for (std::size_t i = 0; i < summaries_; ++i) {
    const SessionSummary& s = sessions_[(first + i) % kMaxSessionSummaries];
    a.push_back({{"session", s.session},
                 {"client", s.client.data()},
                 {"config", s.config.data()},
                 {"settings", s.settings.data()},
                 {"acquisitions", s.acquisitions},
                 {"spokes", s.spokes},
                 {"frames_due", s.frames_due},
                 {"frames_made", s.frames_made},
                 {"frames_sent", s.frames_sent},
                 {"rejected", s.rejected},
                 {"arrival_to_ready_p50_ms", s.arrival_to_ready_p50_ms},
                 {"arrival_to_ready_p99_ms", s.arrival_to_ready_p99_ms},
                 {"ended", s.ended.data()}});
  }
  return a;
}

void Metrics::absorb(const Metrics& m) {
  for (auto [to, from] : {std::pair{&spokes, &m.spokes},
                          {&bytes, &m.bytes},
                          {&headers, &m.headers},
                          {&closes, &m.closes},
                          {&missing, &m.missing},
                          {&gaps, &m.gaps},
                          {&streams, &m.streams},
                          {&reconfigurations, &m.reconfigurations},
                          {&frames, &m.frames},
                          {&frames_skipped, &m.frames_skipped},
                          {&frames_failed, &m.frames_failed},
                          {&volume_spokes_missing, &m.volume_spokes_missing},
                          {&deadline_stops, &m.deadline_stops},
                          {&clock_invalid, &m.clock_invalid}})
    *to += from->load();
  for (std::size_t r = 0; r < rejected.size(); ++r) rejected[r] += m.rejected[r].load();
  arrival.merge(m.arrival);
  slowest_frames.merge(m.slowest_frames);
  end_to_end.merge(m.end_to_end);
  sender_lag.merge(m.sender_lag);
}

}  // namespace radstream
