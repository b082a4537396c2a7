#include "stream/stream_runtime.hpp"
#include "recon/registry.hpp"

#include "recon/memory_budget.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/log.hpp"
#include "gpu/cuda_runtime.hpp"
#include "recon/gpu_warm_up.hpp"
#include "recon/memory_budget.hpp"
#include "stream/session_server.hpp"

namespace radstream {
namespace {

RecordOptions record_options(const SinkParams& s, const std::string& path) {
  RecordOptions o;
  o.path = path;
  o.overwrite = s.record_overwrite;
  o.flush_s = s.record_flush_s;
  o.max_files = s.record_max_files;
  return o;
}

}  // namespace

StreamRuntime::StreamRuntime(const RunConfig& cfg, const Registry& registry, const ProtocolServers& protocols)
    : cfg_(cfg), registry_(registry), zctx_(1) {
  cfg_.recon.keep_phase = cfg_.wants_phase();
  cfg_.validate();
  registry_.method(cfg_.recon.method);  // a method the registry lacks is said now, before any stream comes
  const BackendDecision b = resolve_backend(cfg_.recon.backend);
  log::info("run: backend {} ({})", to_string(b.backend), b.reason);
  if (b.backend == Backend::Cuda)  // before any stream: its first frames would wait for it
    log::debug("run: GPU libraries loaded in {:.0f} ms", warm_up_gpu_libraries());
  if (!cfg_.sinks.record.empty()) {
    record_names_ = std::make_shared<RecordingNames>(record_options(cfg_.sinks, cfg_.sinks.record));
    recorder_ =
        std::make_unique<Recorder>(record_options(cfg_.sinks, cfg_.sinks.record), metrics_, record_names_);
  }
  recording_ = cfg_.sinks.record;
  if (!cfg_.stream.curve_key.empty()) {
    zap_ = std::make_unique<ZapHandler>(zctx_, read_curve_allow_list(cfg_.stream.curve_clients),
                                        metrics_.auth_denied);
    log::info("security: CURVE on (key {}, {} admitted by {})", cfg_.stream.curve_key, "the public keys",
              cfg_.stream.curve_clients);
  }
  const int slices = cfg_.stream.slices;
  metrics_.slice_count = slices;
  // Several GPUs: each slice's worker and spoke ring on its GPU (placement.gpus); else the current GPU.
  std::vector<int> gpu_of;
  if (!cfg_.placement.gpus.empty()) {
    if (b.backend != Backend::Cuda)
      throw ConfigError("placement.gpus " + cfg_.placement.gpus + " needs the cuda backend (it resolved to " +
                        to_string(b.backend) + ": " + b.reason + ")");
    gpu_of = cfg_.placement.assign_slices(slices, gpu::query().device_count);
    for (int s = 0; s < slices; ++s) log::info("run: slice {} on GPU {}", s, gpu_of[std::size_t(s)]);
  }
  intake_ = std::make_unique<StreamIntake>(cfg_.stream, metrics_, b.backend == Backend::Cuda,
                                           cfg_.frames.max_window, recorder_.get());
  if (!gpu_of.empty()) intake_->set_ring_gpus(gpu_of);
  intake_->set_frame_stride(cfg_.frames.stride);
  {
    const bool cuda = b.backend == Backend::Cuda;
    per_stream_limit_ = memory_limit(cfg_.stream.memory_limit, "stream.memory_limit", cuda, 0.25);
    memory_ = std::make_shared<MemoryAccount>(
        memory_limit(cfg_.stream.memory_limit_total, "stream.memory_limit_total", cuda, 0.25));
    log::debug("run: memory budget per stream header: {}; for all streams: {}", per_stream_limit_.source,
               memory_->limit().source);
    intake_->set_memory_check([this, cuda](const StreamHeader& h) {
      const MemoryNeed need = memory_need(registry_, h, cfg_.recon, cfg_.frames.max_window,
                                          cfg_.stream.ring_margin, cfg_.stream.slices, cuda);
      log::debug("run: a stream of matrix {}, {} samples x {} coils needs at most {}", h.matrix, h.samples,
                 h.coils, need.describe());
      if (std::string why = over_budget(need, per_stream_limit_); !why.empty()) return why;
      return memory_->reserve(own_stream_memory_, need);
    });
  }
  if (!cfg_.frames.skip_when_behind) intake_->keep_spokes_for_every_frame();
  sinks_ = make_sinks(cfg_.sinks, zctx_, metrics_, cfg_.stream.curve_key, cfg_.stream.connections);
  servers_ = protocols(cfg_, *this);  // its own stream's feeder; each MRD client a session of its own
  for (int s = 0; s < slices; ++s) {
    latest_.push_back(std::make_unique<LatestFrame>());
    workers_.push_back(std::make_unique<ReconWorker>(
        cfg_.frames, cfg_.recon, b.backend, registry, *intake_, metrics_,
        [this](std::shared_ptr<const FrameResult> f) { emit(std::move(f)); }, s,
        gpu_of.empty() ? -1 : gpu_of[std::size_t(s)]));
  }
}

StreamRuntime::~StreamRuntime() {
  stop();
}

double StreamRuntime::elapsed_s() const {
  return t0_ns_ ? double(monotonic_ns() - t0_ns_) * 1e-9 : 0.0;
}

void StreamRuntime::start() {
  if (running_.exchange(true)) return;
  t0_ns_ = monotonic_ns();
  for (auto& w : workers_) w->start();
  sink_thread_ = std::thread([this] { sink_loop(); });
  for (auto& s : servers_) s->start();
  if (cfg_.sinks.report_interval_s > 0) reporter_ = std::thread([this] { report_loop(); });
}

void StreamRuntime::stop() {
  if (!running_.exchange(false)) return;
  for (auto& s : servers_) s->stop();  // their sessions first, and what feeds the runtime's own stream
  intake_->stop();
  for (auto& w : workers_) w->stop();
  {
    std::lock_guard lock(sink_m_);
    sinks_stop_ = true;
  }
  sink_cv_.notify_all();
  if (sink_thread_.joinable()) sink_thread_.join();
  report_cv_.notify_all();
  if (reporter_.joinable()) reporter_.join();
  {
    std::lock_guard lock(record_m_);
    if (recorder_) {
      recorder_->stop();
      last_recording_ = recorder_->status();
      log::info("run: recording: {}", last_recording_);
    }
  }
  log::info("run: {}", metrics_.line(elapsed_s()));
  const auto spokes = metrics_.spokes.load();
  if (metrics_.frames.load() == 0 && spokes > 0 && !workers_.empty() &&
      spokes < std::uint64_t(window()) * std::uint64_t(std::max(1, cfg_.stream.slices)))
    log::warn("run: no frame: {} spokes arrived, fewer than one window of {} spokes per slice (--window)",
              spokes, window());
  const auto made = metrics_.frames.load(), skipped = metrics_.frames_skipped.load();
  if (skipped > made && !skip_hint_said_)
    log::warn(
        "run: {} of {} frames were skipped to stay live (the reconstruction could not keep up); for a "
        "recording where every frame matters, run with --no-skip",
        skipped, made + skipped);
  write_metrics_json();
}

void StreamRuntime::set_window(int w) {
  if (w < 1 || w > cfg_.frames.max_window)
    throw ConfigError(
        fmt::format("window {} is outside 1..{} (frames.max_window)", w, cfg_.frames.max_window));
  for (auto& wk : workers_) wk->set_window(w);
}

void StreamRuntime::set_stride(int s) {
  if (s < 1 || s > 1 << 16) throw ConfigError(fmt::format("stride {} is outside 1..65536", s));
  for (auto& w : workers_) w->set_stride(s);
  intake_->set_frame_stride(s);
}

void StreamRuntime::set_recon(const ReconParams& p, int slice) {
  if (slice < -1 || slice >= slices())
    throw ConfigError(fmt::format("slice {} is outside 0..{}", slice, slices() - 1));
  p.validate();
  const BackendDecision b =
      resolve_backend(p.backend);  // an unusable backend is refused here, with the reason
  if (!cfg_.placement.gpus.empty() && b.backend != Backend::Cuda)
    throw ConfigError("placement.gpus is set: the slices stay on their GPUs (backend cuda)");
  for (int s = 0; s < slices(); ++s)
    if (slice < 0 || s == slice) workers_[std::size_t(s)]->set_recon(p, b.backend);
}

void StreamRuntime::set_recording(const std::string& path) {
  std::unique_ptr<Recorder> next;
  if (!path.empty()) {
    RecordOptions o = record_options(cfg_.sinks, path);
    o.overwrite = false;  // a file named in the viewer is never replaced
    next = std::make_unique<Recorder>(o, metrics_);
  }
  std::lock_guard lock(record_m_);
  intake_->set_recorder(next.get());
  if (recorder_) {
    recorder_->stop();
    last_recording_ = recorder_->status();
    log::info("run: recording: {}", last_recording_);
  }
  recorder_ = std::move(next);
  recording_ = path;
  log::info("run: recording {}", path.empty() ? std::string("off") : "to " + path);
}

std::string StreamRuntime::recording() const {
  std::lock_guard lock(record_m_);
  return recording_;
}

std::string StreamRuntime::recording_status() const {
  std::lock_guard lock(record_m_);
  return recorder_ ? recorder_->status() : last_recording_;
}

std::string StreamRuntime::report() {
  return metrics_.line(elapsed_s());
}

void StreamRuntime::write_metrics_json() const {
  if (cfg_.sinks.metrics_json.empty()) return;
  const std::filesystem::path p(cfg_.sinks.metrics_json);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream o(p);
  if (!o) {
    log::error("run: cannot write {}", p.string());
    return;
  }
  o << metrics_.json(elapsed_s());
  log::info("run: metrics in {}", p.string());
}

void StreamRuntime::emit(std::shared_ptr<const FrameResult> f) {
  metrics_.add_frame_latency(f->last_acquired_ns, f->last_arrival_ns, f->ready_ns, f->slice);
  metrics_.frame_gaps.frame(f->ready_ns, f->last_arrival_ns, f->make_ms, metrics_.start_ns);
  metrics_.slowest_frames.frame(*f, metrics_.start_ns);
  if (on_frame_) on_frame_(*f);
  to_sinks(f, cfg_.frames.skip_when_behind ? SinkDelivery::DropOldest : SinkDelivery::Wait);
  ++metrics_.frames;
  latest_.at(std::size_t(f->slice))->put(std::move(f));
}

void StreamRuntime::to_sinks(std::shared_ptr<const FrameResult> f, SinkDelivery delivery) {
  {
    std::unique_lock lock(sink_m_);
    // Waited for in slices, so that a stop is seen even if no sink ever takes a frame again.
    while (delivery == SinkDelivery::Wait && sink_q_.size() >= kSinkQueue && !sinks_stop_ && running_)
      sink_room_cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (sink_q_.size() >= kSinkQueue) {
      sink_q_.pop_front();
      ++metrics_.sink_dropped;
    }
    sink_q_.push_back(std::move(f));
  }
  sink_cv_.notify_one();
}

void StreamRuntime::sink_loop() {
  for (;;) {
    std::shared_ptr<const FrameResult> f;
    {
      std::unique_lock lock(sink_m_);
      sink_cv_.wait(lock, [&] { return !sink_q_.empty() || sinks_stop_; });
      if (sink_q_.empty()) return;
      f = sink_q_.front();
      sink_q_.pop_front();
      sink_busy_ = true;
    }
    sink_room_cv_.notify_all();
    for (std::size_t i = 0; i < sinks_.size(); ++i) {
      try {  // one sink's failure drops the frame for that sink only
        sinks_[i]->consume(*f);
      } catch (const std::exception& e) {
        once_.error(3 + int(i), "sink " + sinks_[i]->name() + " failed: " + e.what());
        ++metrics_.sink_dropped;
      }
    }
    std::lock_guard lock(sink_m_);
    sink_busy_ = false;
  }
}

namespace {

// A session's settings as its pipeline runs them: the largest window at least the window; the backend
// resolved (an unusable one is refused, with why).
SessionSettings resolved(SessionSettings s) {
  s.frames.max_window = std::max(s.frames.max_window, s.frames.window);
  s.frames.validate();
  s.recon.validate();
  s.backend = resolve_backend(s.recon.backend).backend;
  return s;
}

}  // namespace

std::string StreamRuntime::reserve_memory(const SessionSettings& settings, const StreamHeader& h,
                                          MemoryAccount::Hold& hold) const {
  const SessionSettings s = resolved(settings);
  const MemoryNeed need = memory_need(registry_, h, s.recon, s.frames.max_window, cfg_.stream.ring_margin,
                                      cfg_.stream.slices, s.backend == Backend::Cuda);
  if (std::string why = over_budget(need, per_stream_limit_); !why.empty()) return why;
  return memory_->reserve(hold, need);
}

std::unique_ptr<SessionPipeline> StreamRuntime::open_session(SessionSettings settings, ReconWorker::Emit emit,
                                                             std::shared_ptr<MemoryAccount::Hold> hold) {
  SessionSettings s = resolved(std::move(settings));
  const int opened = sessions_opened_++;
  if (!cfg_.placement.gpus.empty() && s.backend == Backend::Cuda) {
    const auto gpus = cfg_.placement.assign_slices(opened + 1, gpu::query().device_count);
    s.gpu = gpus.back();  // sessions take the GPUs in turn, as slices do
  }
  std::unique_ptr<Recorder> rec;
  if (record_names_)
    rec = std::make_unique<Recorder>(record_options(cfg_.sinks, cfg_.sinks.record), metrics_, record_names_);
  auto pipe = std::make_unique<SessionPipeline>(cfg_.stream, s, registry_, std::move(rec), std::move(emit));
  const SessionSettings& set = pipe->settings();
  if (!hold) hold = std::make_shared<MemoryAccount::Hold>();
  pipe->intake().set_memory_check(
      [this, set, hold](const StreamHeader& h) { return reserve_memory(set, h, *hold); });
  pipe->start();
  return pipe;
}

std::vector<std::string> StreamRuntime::session_lines() const {
  std::vector<std::string> out;
  for (const auto& s : servers_)
    for (auto& line : s->session_lines()) out.push_back(s->protocol() + ": " + line);
  return out;
}

std::optional<std::string> StreamRuntime::finished_server() const {
  for (const auto& s : servers_)
    if (s->finished()) return s->failure();
  return std::nullopt;
}

std::string StreamRuntime::server_endpoints() const {
  std::string out;
  for (const auto& s : servers_)
    if (!s->feeds_own_stream()) out += fmt::format(" or a {} client on {}", s->protocol(), s->endpoint());
  return out;
}

std::string StreamRuntime::endpoint() const {
  for (const auto& s : servers_)
    if (s->feeds_own_stream()) return s->endpoint();
  return {};
}

std::string StreamRuntime::endpoint_of(const std::string& protocol) const {
  for (const auto& s : servers_)
    if (s->protocol() == protocol) return s->endpoint();
  return {};
}

std::string StreamRuntime::stop_outlook() const {
  std::vector<std::string> parts;
  for (const auto& w : workers_)
    if (const auto f = w->in_flight())
      parts.push_back(fmt::format(
          "the frame at spoke {}{} ({:.1f} s in the making so far)", f->end,
          workers_.size() > 1 ? fmt::format(" of slice {}", w->slice()) : std::string(), f->seconds));
  if (const std::size_t n = session_lines().size())
    parts.push_back(fmt::format("{} client session(s) to end, each told why (at most {:.0f} s)", n,
                                cfg_.mrd.drain_timeout_s));
  if (!recording().empty()) parts.push_back("the recording " + recording() + " to close");
  if (parts.empty()) return "nothing in flight";
  std::string out = "waiting for " + parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i) out += (i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

// Once per run: when more than half the frames of the last 10 s were skipped to stay live, the way to have
// every frame (a replay at --speed max, a slow backend) is said while it matters, not only at the end.
void StreamRuntime::say_skip_hint(std::int64_t now) {
  if (skip_hint_said_ || !cfg_.frames.skip_when_behind) return;
  const double skipped = metrics_.skipped_recent.sum(now);
  const std::size_t made = metrics_.pipeline_recent.summary(now).count;
  if (skipped <= double(made)) return;
  skip_hint_said_ = true;
  log::warn(
      "run: {:.0f} frames skipped in the last 10 s ({} made): the reconstruction cannot keep up; --no-skip "
      "reconstructs every frame",
      skipped, made);
}

void StreamRuntime::report_loop() {
  try {
    const auto period = std::chrono::duration<double>(cfg_.sinks.report_interval_s);
    auto next =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(period);
    std::unique_lock lock(report_m_);
    // No line of zeros while nothing has come (a sender still starting, precomputing): one "waiting" line now
    // and then every 10 s; and while nothing changes (a stream ended, a sender lost), one line every 10 s.
    const std::int64_t quiet_every_ns = std::int64_t(std::max(10.0, cfg_.sinks.report_interval_s) * 1e9);
    std::int64_t last_quiet_ns = 0;
    std::uint64_t seen = ~0ull;
    while (running_) {
      if (report_cv_.wait_until(lock, next, [&] { return !running_.load(); })) break;
      next += std::chrono::duration_cast<std::chrono::nanoseconds>(period);
      const std::int64_t now = monotonic_ns();
      const std::uint64_t activity = metrics_.messages.load() + metrics_.frames.load() +
                                     metrics_.frames_failed.load() + metrics_.mrd.acquisitions.load() +
                                     metrics_.mrd.images_sent.load();
      const bool quiet_due = last_quiet_ns == 0 || now - last_quiet_ns >= quiet_every_ns;
      const std::vector<std::string> sessions = session_lines();
      if (metrics_.messages.load() == 0 && sessions.empty() && metrics_.mrd.acquisitions.load() == 0) {
        if (quiet_due)
          log::info("run: waiting for a sender on {}{} ({:.0f} s)", endpoint(), server_endpoints(),
                    elapsed_s()),
              last_quiet_ns = now;
        continue;
      }
      // A frame in the making for over a second keeps the line's rhythm, saying so: a slow frame (NLINV on
      // a CPU) holds everything else still, and silence would look like a hang.
      std::string in_flight;
      for (const auto& w : workers_)
        if (const auto f = w->in_flight(); f && f->seconds >= 1.0)
          in_flight +=
              fmt::format("; {}frame at spoke {} in flight {:.1f} s",
                          workers_.size() > 1 ? fmt::format("slice {}: ", w->slice()) : std::string(), f->end,
                          f->seconds);
      if (activity == seen && !quiet_due && in_flight.empty()) continue;
      if (activity == seen && in_flight.empty()) last_quiet_ns = now;
      seen = activity;
      if (metrics_.messages.load() > 0) log::info("{}{}", metrics_.line(elapsed_s()), in_flight);
      for (const auto& line : sessions) log::info("{}", line);
      say_skip_hint(now);
    }
  } catch (const std::exception& e) {
    once_.error(10, std::string("the status reporter stopped: ") + e.what());
  }
}

}  // namespace radstream
