#include "stream/recon_worker.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "gpu/handles.hpp"
#include "recon/methods.hpp"
#include "stream/frame_scheduler.hpp"
#include "stream/run_config.hpp"

namespace radstream {

ReconWorker::ReconWorker(const FrameParams& frames, const ReconParams& recon, Backend backend,
                         const Registry& registry, SpokeSource& source, Metrics& metrics, Emit emit,
                         int slice, int gpu, std::string tag)
    : fp_(frames),
      slice_(slice),
      gpu_(gpu),
      tag_(std::move(tag)),
      registry_(registry),
      source_(source),
      metrics_(metrics),
      emit_(std::move(emit)),
      window_(frames.window),
      stride_(frames.stride),
      backend_(backend),
      recon_(recon) {
  // Tests: every frame takes at least this long (RADSTREAM_TEST_FRAME_DELAY_MS), as on a machine that cannot
  // keep up: how the viewer shows a pipeline behind (DELAYED, frames dropped) is tested with it.
  if (const char* d = std::getenv("RADSTREAM_TEST_FRAME_DELAY_MS"))
    test_delay_ms_ = std::max(0, std::atoi(d));
}

ReconWorker::~ReconWorker() {
  stop();
}

void ReconWorker::start() {
  if (running_.exchange(true)) return;
  thread_ = std::thread([this] { loop(); });
}

void ReconWorker::stop() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
}

void ReconWorker::set_recon(const ReconParams& p, Backend backend) {
  std::lock_guard lock(settings_m_);
  pending_ = std::make_unique<std::pair<ReconParams, Backend>>(p, backend);
}

ReconParams ReconWorker::recon() const {
  std::lock_guard lock(settings_m_);
  return pending_ ? pending_->first : recon_;
}

std::string ReconWorker::last_error() const {
  std::lock_guard lock(error_m_);
  return last_error_;
}

std::optional<ReconWorker::InFlight> ReconWorker::in_flight() const {
  const std::int64_t since = in_flight_since_ns_.load();
  if (since == 0) return std::nullopt;
  return InFlight{in_flight_end_.load(), double(monotonic_ns() - since) * 1e-9};
}

std::string ReconWorker::slice_prefix() const {
  return (tag_.empty() ? std::string() : tag_ + ": ") +
         (source_.slices() > 1 ? "slice " + std::to_string(slice_) + ": " : std::string());
}

void ReconWorker::set_error(const std::string& e) {
  std::lock_guard lock(error_m_);
  last_error_ = e;
}

void ReconWorker::loop() {
  std::unique_ptr<gpu::DeviceGuard> on_gpu;
  while (running_) {
    try {
      if (gpu_ >= 0 && !on_gpu) on_gpu = std::make_unique<gpu::DeviceGuard>(gpu_);
      frames();
      return;
    } catch (const std::exception& e) {
      ++metrics_.frames_failed;
      ++metrics_.slice(slice_).frames_failed;
      set_error(e.what());
      once_.error(4, slice_prefix() + "the reconstruction thread hit an unexpected error: " + e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

bool ReconWorker::make_frame(ReconChain& chain, SpokeRing& ring, std::uint64_t end, int W, Frame& host_frame,
                             FrameResult& out) {
  const auto t0 = monotonic_ns();
  View<const cfloat> img;
  SpokeRing::WindowTimes times;
  if (chain.backend() == Backend::Cuda && ring.on_device()) {
    // A coil-map estimate due (cg-sense, sense combination) needs the window on the host as well: the whole
    // window for the first, the band of samples it reads for a refresh.
    const double band_radius = chain.map_refresh_band();
    const bool want = band_radius <= 0 && chain.wants_host_frame();
    if (want && !ring.copy_window(end, host_frame, times)) return false;
    CoilMapBand band;
    if (band_radius > 0 && !ring.copy_window_band(end, W, band_radius, band)) return false;
    HeldWindow held{ring};  // the window's spokes stay held until the chain has synchronized (or thrown)
    img = chain.reconstruct_device(
        [&](cfloat* d_data, float* d_traj, gpu::StreamRef stream) {
          return held.on = ring.gather_window(end, W, d_data, d_traj, stream, times);
        },
        want ? &host_frame : nullptr, band_radius > 0 ? &band : nullptr);
    if (!img.data) return false;
  } else {
    if (!ring.copy_window(end, host_frame, times)) return false;
    metrics_.add_stage("assemble", double(monotonic_ns() - t0) * 1e-6);
    img = chain.reconstruct(host_frame);
  }
  if (test_delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(test_delay_ms_));
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
  } else if (coil >= 0 && chain.has_coil_maps() && coil < chain.geometry().coils) {
    // A recipe without per-coil images (cg-sense): the coil view shows that coil's sensitivity map, |S_c|.
    const auto maps = chain.coil_maps();
    const std::size_t px = out.image.size();
    for (std::size_t i = 0; i < px; ++i)
      out.image[i] = cfloat(std::abs(maps.data[std::size_t(coil) * px + i]), 0.f);
    out.coil = coil;
  } else if (coil >= 0 && coil < chain.estimated_coil_maps(estimated_maps_)) {
    // nlinv: its own estimate of the sensitivities (of the virtual coils when it compresses them).
    const std::size_t px = out.image.size();
    for (std::size_t i = 0; i < px; ++i)
      out.image[i] = cfloat(std::abs(estimated_maps_[std::size_t(coil) * px + i]), 0.f);
    out.coil = coil;
  }
  if (out.coil < 0 && recon_.keep_phase && chain.keeps_complex_image()) {
    const auto c = chain.complex_image();
    out.complex_image.assign(c.data, c.data + c.size());
  }
  for (const auto& t : chain.timings()) metrics_.add_stage(t.stage, t.ms);
  const SolverStats solver = chain.solver_stats();
  if (solver.present) {
    out.iterations = solver.iterations;
    out.residual = solver.residual;
    const double deadline = registry_.method(recon_.method).deadline(recon_);
    metrics_.add_solver(solver.iterations, solver.residual, solver.ms, deadline);
    if (solver.stopped_early) ++metrics_.deadline_stops;
    metrics_.deadline_reserve_ms = solver.deadline_reserve_ms;
    if (solver.deadline_reserve_ms > metrics_.deadline_reserve_max_ms.load())
      metrics_.deadline_reserve_max_ms = solver.deadline_reserve_ms;
  }
  out.make_ms = double(out.ready_ns - t0) * 1e-6;
  metrics_.add_stage("frame_total", out.make_ms);
  return true;
}

bool ReconWorker::drained() const {
  // The count first, then the flag: frames() lowers the flag before it publishes the count of a due frame,
  // so a count that makes a frame due is never read with the flag of the idle pass before it.
  const std::uint64_t checked = checked_count_;
  if (!drained_) return false;
  const SpokeSource::State st = source_.state(slice_);
  return seen_generation_ == st.generation &&
         (!st.ring || checked == kAnyCount || checked == st.ring->count());
}

void ReconWorker::frames() {
  std::unique_ptr<ReconChain> chain;
  std::unique_ptr<VolumeChain> volume;  // a stack of stars' frames are volumes (instead of `chain`)
  std::uint64_t generation = 0, number = 0;
  int W = 0;
  Frame host_frame;
  FrameScheduler sched;
  std::shared_ptr<SpokeRing> kept_ring;  // the ring and frame end last told to keep spokes (every-frame mode)
  std::uint64_t kept_end = 0, kept_from = 0;
  while (running_) {
    const SpokeSource::State st = source_.state(slice_);
    if (!st.ring) {
      checked_count_ = kAnyCount;
      drained_ = true;
      source_.wait_for(generation, 1, std::chrono::milliseconds(100), slice_);
      continue;
    }
    {
      std::unique_ptr<std::pair<ReconParams, Backend>> next;
      {
        std::lock_guard lock(settings_m_);
        next = std::move(pending_);
        if (next) recon_ = next->first;
      }
      if (next) {  // rebuild the chain with the new settings before the next frame
        backend_ = next->second;
        chain.reset();
        volume.reset();
        log::info("run: {}new reconstruction settings ({} backend)", slice_prefix(), to_string(next->second));
      }
    }
    int want = window_, stride = stride_;
    if (fp_.framing == Framing::Rotation) want = stride = std::max(1, st.header.angles.spokes_per_rotation);
    // A stack of stars: window and stride count in-plane spokes; the ring holds every partition's.
    const int P = st.header.partitions;
    want *= P;
    stride *= P;
    if (st.generation != generation || want != W || (!chain && !volume)) {
      // Not drained while the chain is (re)made: a slow configure (FFT plans) after a quick stream would
      // otherwise let `run --until-close` stop before the stream's first frame.
      drained_ = false;
      const bool new_stream = st.generation != generation;
      generation = st.generation;
      seen_generation_ = generation;
      W = std::min(want, (st.ring->capacity() - 1) / P * P);
      try {
        const Geometry g = st.header.geometry(W);
        if (P > 1) {
          chain.reset();
          if (!volume) {
            std::lock_guard lock(settings_m_);
            volume = std::make_unique<VolumeChain>(recon_, backend_, registry_);
          }
          volume->configure(st.header.geometry(W / P), P);
          // The GPU's ring: the window is sorted on the GPU and needs no host copy (only its size).
          if (backend_ == Backend::Cuda && st.ring->on_device()) {
            host_frame = Frame();
            host_frame.geometry = g;
          } else {
            host_frame = Frame(g);
          }
        } else {
          volume.reset();
          if (!chain) {
            std::lock_guard lock(settings_m_);
            chain = std::make_unique<ReconChain>(recon_, backend_, registry_);
            chain->set_live_maps(true);
          }
          chain->configure(g);
          if (backend_ == Backend::Cpu || !st.ring->on_device() || chain->needs_coil_maps())
            host_frame = Frame(g);
        }
        // A session's server has said what the session runs (its config, window, stride, backend) in one line
        // already: this one is for the run's own stream, and a session's only in the debug log.
        const std::string line =
            P > 1 ? fmt::format(
                        "run: {}reconstructing volumes of {} partitions x {} ({} backend), a volume "
                        "every {} spokes of each partition",
                        slice_prefix(), P, st.header.geometry(W / P).str(), to_string(backend_.load()),
                        stride / P)
                  : fmt::format("run: {}reconstructing {} ({} backend), a frame every {} spokes",
                                slice_prefix(), g.str(), to_string(backend_.load()), stride);
        if (tag_.empty())
          log::info("{}", line);
        else
          log::debug("{}", line);
      } catch (const std::exception& e) {
        set_error(e.what());
        once_.error(0, slice_prefix() + "cannot configure the reconstruction: " + e.what());
        ++metrics_.frames_failed;
        ++metrics_.slice(slice_).frames_failed;
        chain.reset();
        volume.reset();
        st.ring->keep_from(SpokeRing::kNone);  // nothing is made from this ring: never stall the ingest on it
        kept_ring.reset();
        checked_count_ = kAnyCount;
        drained_ = true;  // nothing can be made until the next stream header
        source_.wait_for(generation, ~std::uint64_t(0), std::chrono::milliseconds(200), slice_);
        continue;
      }
      if (new_stream)
        sched.reset(W, stride, fp_.skip_when_behind);
      else
        sched.set_window(W);
    }
    sched.set_stride(stride);
    // Every frame wanted: the ingest waits rather than overwrite the next frame's spokes (lossless
    // backpressure).
    if (!fp_.skip_when_behind && (st.ring != kept_ring || sched.next_end() != kept_end ||
                                  sched.next_end() - std::uint64_t(W) != kept_from)) {
      kept_ring = st.ring;  // told once per frame (or window change), not on every wake-up
      kept_end = sched.next_end();
      kept_from = kept_end - std::uint64_t(W);
      st.ring->keep_from(kept_from, kept_end);
    }
    const std::uint64_t count = st.ring->count();
    const auto due = sched.next(count);
    if (due) drained_ = false;  // before the count (drained() reads them in the other order)
    checked_count_ = count;
    if (!due) drained_ = true;
    if (!due) {
      source_.wait_for(generation, sched.next_end(), std::chrono::milliseconds(100), slice_);
      continue;
    }
    metrics_.add_skipped(due->skipped);
    auto result = std::make_shared<FrameResult>();
    in_flight_end_ = due->end;
    in_flight_since_ns_ = monotonic_ns();
    struct Landed {  // whatever way make_frame leaves, the frame is no longer in the making
      std::atomic<std::int64_t>& since;
      ~Landed() { since = 0; }
    } landed{in_flight_since_ns_};
    try {
      if (volume ? !make_volume(*volume, *st.ring, due->end, host_frame, *result)
                 : !make_frame(*chain, *st.ring, due->end, W, host_frame, *result)) {
        // The reconstruction fell so far behind that the ring moved past this frame: a frame skipped for
        // speed (CANNOT KEEP UP), not a failure of the data or the code.
        once_.warn(
            1,
            slice_prefix() +
                "a frame's spokes were overwritten before it was assembled (reconstruction behind); skipped");
        metrics_.add_skipped(1);
        sched.advance();
        continue;
      }
    } catch (const std::exception& e) {
      // A non-finite image is its own kind (a warning), so a client hears of it even after another failure.
      if (dynamic_cast<const NumericError*>(&e))
        once_.warn(5, slice_prefix() + "a frame was dropped: " + e.what());
      else
        once_.error(2, slice_prefix() + "a frame failed: " + e.what());
      set_error(e.what());
      ++metrics_.frames_failed;
      ++metrics_.slice(slice_).frames_failed;
      sched.advance();
      continue;
    }
    sched.advance();
    result->number = ++number;
    result->slice = slice_;
    result->session = tag_;
    emit_(std::move(result));
  }
}

}  // namespace radstream
