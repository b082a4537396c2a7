#include "stream/pipeline.hpp"

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/param_reader.hpp"
#include "io/frame_io.hpp"
#include "stream/frame_scheduler.hpp"

namespace radstream {

namespace {

template <class P>
void read_section(const YAML::Node& root, const char* name, P& p) {
  ParamReader r(root[name], name);
  p.visit(r);
  r.finish();
}

}  // namespace

void FrameParams::validate() const {
  ParamChecker c("frames");
  const_cast<FrameParams*>(this)->visit(c);
  if (window > max_window)
    throw ConfigError(fmt::format("frames.window = {} exceeds frames.max_window = {}", window, max_window));
}

void SinkParams::validate() const {
  ParamChecker c("sinks");
  const_cast<SinkParams*>(this)->visit(c);
  if (!record.empty() && (record.size() < 4 || record.substr(record.size() - 3) != ".h5"))
    throw ConfigError("sinks.record '" + record + "' must name an .h5 file");
}

RunConfig RunConfig::from_yaml(const YAML::Node& root, const std::string& context) {
  RunConfig c;
  try {
    const bool any = root.IsDefined() && !root.IsNull();
    if (any && !root.IsMap()) throw ConfigError("the file is not a YAML map of sections");
    if (any)
      for (const auto& kv : root) {
        const auto key = kv.first.as<std::string>();
        if (key != "stream" && key != "frames" && key != "sinks" && key != "recon" && key != "simulate")
          throw ConfigError("unknown section '" + key +
                            "' (expected stream, frames, sinks, recon, simulate)");
      }
    read_section(root, "stream", c.stream);
    read_section(root, "frames", c.frames);
    read_section(root, "sinks", c.sinks);
    c.recon = ReconParams::from_config(root["recon"]);
    c.validate();
  } catch (const ConfigError& e) {
    throw ConfigError(context + ": " + e.what());
  } catch (const YAML::Exception& e) {
    throw ConfigError(context + ": " + e.what());
  }
  return c;
}

void RunConfig::validate() const {
  stream.validate();
  frames.validate();
  sinks.validate();
  recon.validate();
}

Pipeline::Pipeline(const RunConfig& cfg, const Registry& registry)
    : cfg_(cfg), registry_(registry), zctx_(1), window_(cfg.frames.window), stride_(cfg.frames.stride) {
  cfg_.validate();
  const BackendDecision b = resolve_backend(cfg.recon.backend);
  backend_ = b.backend;
  log::info("run: backend {} ({})", to_string(backend_), b.reason);
  if (!cfg.sinks.record.empty())
    recorder_ = std::make_unique<Recorder>(cfg.sinks.record, std::size_t(1) << 30, metrics_);
  ingest_ = std::make_unique<Ingest>(zctx_, cfg.stream, metrics_, backend_ == Backend::Cuda,
                                     cfg.frames.max_window, recorder_.get());
  if (!cfg.sinks.publish.empty()) {
    publisher_ = std::make_unique<zmq::socket_t>(zctx_, zmq::socket_type::pub);
    publisher_->set(zmq::sockopt::linger, 0);
    publisher_->set(zmq::sockopt::sndhwm, 16);
    try {
      publisher_->bind(cfg.sinks.publish);
    } catch (const zmq::error_t& e) {
      throw ConfigError(fmt::format("sinks.publish: cannot bind {}: {}", cfg.sinks.publish, e.what()));
    }
  }
  if (!cfg.sinks.images.empty()) std::filesystem::create_directories(cfg.sinks.images);
}

Pipeline::~Pipeline() {
  stop();
}

double Pipeline::elapsed_s() const {
  return t0_ns_ ? double(monotonic_ns() - t0_ns_) * 1e-9 : 0.0;
}

void Pipeline::start() {
  if (running_.exchange(true)) return;
  t0_ns_ = monotonic_ns();
  ingest_->start();
  recon_ = std::thread([this] { recon_loop(); });
  sink_ = std::thread([this] { sink_loop(); });
  if (cfg_.sinks.report_interval_s > 0) reporter_ = std::thread([this] { report_loop(); });
}

void Pipeline::stop() {
  if (!running_.exchange(false)) return;
  ingest_->stop();
  cv_.notify_all();
  if (recon_.joinable()) recon_.join();
  {
    std::lock_guard lock(m_);
    sinks_stop_ = true;
  }
  cv_.notify_all();
  if (sink_.joinable()) sink_.join();
  if (reporter_.joinable()) reporter_.join();
  if (recorder_) recorder_->stop();
  log::info("run: {}", metrics_.line(elapsed_s()));
  write_metrics_json();
}

void Pipeline::set_window(int w) {
  if (w < 1 || w > cfg_.frames.max_window)
    throw ConfigError(
        fmt::format("window {} is outside 1..{} (frames.max_window)", w, cfg_.frames.max_window));
  window_ = w;
}

void Pipeline::set_stride(int s) {
  if (s < 1 || s > 1 << 16) throw ConfigError(fmt::format("stride {} is outside 1..65536", s));
  stride_ = s;
}

void Pipeline::set_recon(const ReconParams& p) {
  p.validate();
  resolve_backend(p.backend);  // resolved here, in the caller: an unusable backend is refused with a message
  std::lock_guard lock(m_);
  pending_recon_ = std::make_unique<ReconParams>(p);
}

ReconParams Pipeline::recon() const {
  std::lock_guard lock(m_);
  return pending_recon_ ? *pending_recon_ : cfg_.recon;
}

std::string Pipeline::last_error() const {
  std::lock_guard lock(m_);
  return last_error_;
}

void Pipeline::set_recording(const std::string& path) {
  std::unique_ptr<Recorder> next;
  if (!path.empty()) next = std::make_unique<Recorder>(path, std::size_t(1) << 30, metrics_);
  ingest_->set_recorder(next.get());
  if (recorder_) recorder_->stop();
  recorder_ = std::move(next);
  std::lock_guard lock(m_);
  recording_ = path;
  log::info("run: recording {}", path.empty() ? std::string("off") : "to " + path);
}

std::string Pipeline::recording() const {
  std::lock_guard lock(m_);
  return recording_;
}

std::shared_ptr<const FrameResult> Pipeline::latest() const {
  std::lock_guard lock(m_);
  return latest_;
}

bool Pipeline::wait_frames(std::uint64_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(m_);
  return cv_.wait_for(lock, timeout, [&] { return metrics_.frames.load() >= n; });
}

std::string Pipeline::report() {
  return metrics_.line(elapsed_s());
}

void Pipeline::write_metrics_json() const {
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

bool Pipeline::make_frame(ReconChain& chain, SpokeRing& ring, std::uint64_t end, int W, Frame& host_frame,
                          FrameResult& out) {
  const auto t0 = monotonic_ns();
  View<const cfloat> img;
  if (chain.backend() == Backend::Cuda && ring.on_device()) {
    struct Held {  // the window's spokes stay held until the chain has synchronized (or thrown)
      SpokeRing& ring;
      bool on = false;
      ~Held() {
        if (on) ring.release_window();
      }
    } held{ring};
    img = chain.reconstruct_device([&](cfloat* d_data, float* d_traj, gpu::StreamRef stream) {
      return held.on = ring.gather_window(end, W, d_data, d_traj, stream);
    });
    if (!img.data) return false;
  } else {
    if (!ring.copy_window(end, host_frame)) return false;
    metrics_.add_stage("assemble", double(monotonic_ns() - t0) * 1e-6);
    img = chain.reconstruct(host_frame);
  }
  const auto times = ring.window_times(end, W);
  out.ready_ns = monotonic_ns();
  out.image.assign(img.data, img.data + img.size());
  out.matrix = chain.geometry().matrix;
  out.window = W;
  out.end_serial = end;
  out.first_spoke = times.first_index;
  out.last_spoke = times.last_index;
  out.last_acquired_ns = times.acquired_ns;
  out.last_arrival_ns = times.arrival_ns;
  const int coil = coil_view_;
  if (coil >= 0 && chain.keeps_coil_images() && coil < chain.geometry().coils) {
    const auto ci = chain.coil_images();
    const std::size_t px = out.image.size();
    for (std::size_t i = 0; i < px; ++i)
      out.image[i] = cfloat(std::abs(ci.data[std::size_t(coil) * px + i]), 0.f);
    out.coil = coil;
  }
  for (const auto& t : chain.timings()) metrics_.add_stage(t.stage, t.ms);
  metrics_.add_stage("frame_total", double(out.ready_ns - t0) * 1e-6);
  return true;
}

void Pipeline::recon_loop() {
  // Policy: a frame that fails is dropped, counted and logged once per kind; a configuration that fails waits
  // for the next stream header; anything else unexpected is counted, logged once, and the loop goes on after
  // a short pause. Nothing escapes the thread.
  while (running_) {
    try {
      recon_frames();
      return;
    } catch (const std::exception& e) {
      ++metrics_.frames_failed;
      {
        std::lock_guard lock(m_);
        last_error_ = e.what();
      }
      log_once(4, std::string("the reconstruction thread hit an unexpected error: ") + e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

void Pipeline::log_once(int kind, const std::string& what) {
  if (!logged_[kind].exchange(true)) log::error("run: {} (further ones are only counted)", what);
}

void Pipeline::recon_frames() {
  std::unique_ptr<ReconChain> chain;
  std::uint64_t generation = 0, number = 0;
  int W = 0;
  Frame host_frame;
  FrameScheduler sched;
  while (running_) {
    const Ingest::State st = ingest_->state();
    if (!st.ring) {
      drained_ = true;
      ingest_->wait_for(generation, 1, std::chrono::milliseconds(100));
      continue;
    }
    {
      std::unique_ptr<ReconParams> next;
      {
        std::lock_guard lock(m_);
        next = std::move(pending_recon_);
      }
      if (next) {  // rebuild the chain with the new settings before the next frame
        const BackendDecision b = resolve_backend(next->backend);
        cfg_.recon = *next;
        backend_ = b.backend;
        chain.reset();
        log::info("run: new reconstruction settings ({} backend: {})", to_string(backend_), b.reason);
      }
    }
    int want = window_, stride = stride_;
    if (cfg_.frames.framing == Framing::Rotation) want = stride = std::max(1, st.header.angles.spokes_per_rotation);
    if (st.generation != generation || want != W || !chain) {
      const bool new_stream = st.generation != generation;
      generation = st.generation;
      W = std::min(want, st.ring->capacity() - 1);
      try {
        if (!chain) chain = std::make_unique<ReconChain>(cfg_.recon, backend_, registry_);
        const Geometry g = st.header.geometry(W);
        chain->configure(g);
        if (backend_ == Backend::Cpu || !st.ring->on_device()) host_frame = Frame(g);
        log::info("run: reconstructing {} ({} backend), a frame every {} spokes", g.str(),
                  to_string(backend_), stride);
      } catch (const std::exception& e) {
        {
          std::lock_guard lock(m_);
          last_error_ = e.what();
        }
        log_once(0, std::string("cannot configure the reconstruction: ") + e.what());
        ++metrics_.frames_failed;
        chain.reset();
        drained_ = true;  // nothing can be made until the next stream header
        ingest_->wait_for(generation, ~std::uint64_t(0), std::chrono::milliseconds(200));
        continue;
      }
      if (new_stream)
        sched.reset(W, stride, cfg_.frames.skip_when_behind);
      else
        sched.set_window(W);
    }
    sched.set_stride(stride);
    const std::uint64_t count = st.ring->count();
    const auto due = sched.next(count);
    drained_ = !due.has_value();
    if (!due) {
      ingest_->wait_for(generation, sched.next_end(), std::chrono::milliseconds(100));
      continue;
    }
    metrics_.frames_skipped += due->skipped;
    auto result = std::make_shared<FrameResult>();
    try {
      if (!make_frame(*chain, *st.ring, due->end, W, host_frame, *result)) {
        log_once(1, "a frame's spokes were overwritten before it was assembled");
        ++metrics_.frames_failed;
        sched.advance();
        continue;
      }
    } catch (const std::exception& e) {
      log_once(2, std::string("a frame failed: ") + e.what());
      ++metrics_.frames_failed;
      sched.advance();
      continue;
    }
    sched.advance();
    result->number = ++number;
    if (result->last_acquired_ns > 0)
      metrics_.end_to_end.add(double(result->ready_ns - result->last_acquired_ns) * 1e-6);
    metrics_.arrival.add(double(result->ready_ns - result->last_arrival_ns) * 1e-6);
    if (on_frame_) on_frame_(*result);
    {
      std::lock_guard lock(m_);
      latest_ = result;
      if (sink_q_.size() >= 8) {
        sink_q_.pop_front();
        ++metrics_.sink_dropped;
      }
      sink_q_.push_back(result);
      ++metrics_.frames;
    }
    cv_.notify_all();
  }
}

void Pipeline::sink_loop() {
  std::vector<float> mag;  // the published magnitudes, reused frame after frame
  for (;;) {
    std::shared_ptr<const FrameResult> f;
    {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return !sink_q_.empty() || sinks_stop_; });
      if (sink_q_.empty()) return;
      f = sink_q_.front();
      sink_q_.pop_front();
    }
    try {
      if (publisher_) {
        std::array<std::byte, 64> h{};
        auto put = [&](std::size_t off, auto v) { std::memcpy(h.data() + off, &v, sizeof(v)); };
        put(0, kImageMagic);
        put(4, std::uint16_t(1));
        put(8, f->number);
        put(16, std::uint32_t(f->matrix));
        put(20, std::uint32_t(f->window));
        put(24, f->first_spoke);
        put(32, f->last_spoke);
        put(40, f->last_acquired_ns);
        put(48, f->ready_ns);
        mag.resize(f->image.size());
        for (std::size_t i = 0; i < mag.size(); ++i) mag[i] = f->image[i].real();
        zmq::message_t m0(h.data(), h.size()), m1(mag.data(), mag.size() * sizeof(float));
        publisher_->send(m0, zmq::send_flags::sndmore | zmq::send_flags::dontwait);
        publisher_->send(m1, zmq::send_flags::dontwait);
        ++metrics_.published;
      }
      if (!cfg_.sinks.images.empty() && f->number % std::uint64_t(cfg_.sinks.image_every) == 0) {
        const std::string name =
            fmt::format("{}/frame_{:06d}.{}", cfg_.sinks.images, f->number, kImageFormats.name(cfg_.sinks.image_format));
        write_image(name, f->image, f->matrix);
        ++metrics_.images_written;
      }
    } catch (const std::exception& e) {
      log_once(3, std::string("a sink failed: ") + e.what());
      ++metrics_.sink_dropped;
    }
  }
}

void Pipeline::report_loop() {
  try {
    report_lines();
  } catch (const std::exception& e) {
    log_once(5, std::string("the status reporter stopped: ") + e.what());
  }
}

void Pipeline::report_lines() {
  const auto period = std::chrono::duration<double>(cfg_.sinks.report_interval_s);
  auto next = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(period);
  std::unique_lock lock(m_);
  while (running_) {
    if (cv_.wait_until(lock, next, [&] { return !running_.load(); })) break;
    lock.unlock();
    log::info("{}", metrics_.line(elapsed_s()));
    lock.lock();
    next += std::chrono::duration_cast<std::chrono::nanoseconds>(period);
  }
}

}  // namespace radstream
