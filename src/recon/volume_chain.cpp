#include "recon/volume_chain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <thread>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/math.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "recon/offline_volume.hpp"
#include "recon/rotated_window.hpp"
#include "recon/volume_assembly_cuda.hpp"
#include "recon/volume_sense.hpp"
#include "recon/volume_sense_live.hpp"

namespace radstream {

Geometry batched_geometry(const Geometry& plane, int partitions) {
  Geometry g = plane;
  g.coils = plane.coils * partitions;
  g.images = partitions;
  return g;
}

bool batches_partitions(const ReconParams& p) {
  return p.batch_partitions && (p.method == ReconMethod::Gridding || p.method == ReconMethod::Fbp) &&
         p.combine.method == CoilCombineMethod::Rss;
}

void VolumeAssembler::configure(const Geometry& plane, int partitions, bool batched) {
  if (partitions < 1) throw ConfigError(fmt::format("partitions = {} must be >= 1", partitions));
  plane_ = plane;
  P_ = partitions;
  batched_ = batched;
  kz_ = HostBuffer<cfloat>();  // made by the first window on the host (a GPU stream's never is)
  // z and kz both centred at h = P/2: x(z) = sum_p y(p) e^{2 pi i (p - h)(z - h) / P} / sqrt(P), i.e. the
  // unnormalized inverse FFT between a phase on the partitions and one on the z positions.
  const int h = P_ / 2;
  pre_.resize(std::size_t(P_));
  post_.resize(std::size_t(P_));
  const double scale = 1.0 / std::sqrt(double(P_));
  for (int p = 0; p < P_; ++p) {
    pre_[std::size_t(p)] = cfloat(std::polar(1.0, -2.0 * kPi * double(p) * h / P_));
    post_[std::size_t(p)] =
        cfloat(std::polar(scale, -2.0 * kPi * double(p) * h / P_ + 2.0 * kPi * double(h) * h / P_));
  }
}

void VolumeAssembler::prepare_host() {
  const std::size_t lines = std::size_t(plane_.coils) * plane_.spokes * plane_.samples;
  if (kz_.size() == lines * std::size_t(P_)) return;
  kz_ = HostBuffer<cfloat>(Extents{lines, std::size_t(P_)});
  plan_ = FftwPlan({P_}, int(lines), FftDirection::Inverse, FftPlanner::Estimate, 0);
}

namespace {

// True when two spokes' trajectories agree (the same in-plane angle): their ends and middle.
bool same_line(const float* a, const float* b, int S) {
  for (int n : {0, S / 4, S - 1})
    if (std::abs(a[2 * n] - b[2 * n]) > 1e-4f || std::abs(a[2 * n + 1] - b[2 * n + 1]) > 1e-4f) return false;
  return true;
}

}  // namespace

void volume_layout(std::span<const std::uint64_t> spoke_index, std::span<const std::uint16_t> partition,
                   int W, int P, const std::function<bool(int, int)>& same_line, VolumeLayout& l) {
  l.missing = 0;
  l.steps.assign(spoke_index.begin(), spoke_index.end());
  std::sort(l.steps.begin(), l.steps.end());
  l.steps.erase(std::unique(l.steps.begin(), l.steps.end()), l.steps.end());
  if (l.steps.empty()) throw InputError("a volume window without spokes");
  if (int(l.steps.size()) > W) l.steps.erase(l.steps.begin(), l.steps.end() - W);
  const int R = int(spoke_index.size());
  l.slot_of.assign(std::size_t(R), -1);
  l.line_of.assign(std::size_t(W), -1);
  l.have.assign(std::size_t(W) * std::size_t(P), 0);
  for (int r = 0; r < R; ++r) {
    const auto it = std::lower_bound(l.steps.begin(), l.steps.end(), spoke_index[std::size_t(r)]);
    const int p = partition[std::size_t(r)];
    // Older than the volume's steps, or a partition the intake would have refused: never indexed.
    if (it == l.steps.end() || *it != spoke_index[std::size_t(r)] || p >= P) continue;
    const int j = int(it - l.steps.begin());
    int& line = l.line_of[std::size_t(j)];
    if (line < 0)
      line = r;
    else if (!same_line(r, line))
      throw RotatedPartitions(fmt::format(
          "spoke {} of partition {} lies at another in-plane angle than the same spoke of partition {}: "
          "partitions rotated against each other",
          spoke_index[std::size_t(r)], p, partition[std::size_t(line)]));
    l.slot_of[std::size_t(r)] = j;
    l.have[std::size_t(j) * P + std::size_t(p)] = 1;
  }
  for (auto h : l.have) l.missing += h ? 0 : 1;
}

VolumeAssembler::Counts VolumeAssembler::assemble(const Frame& raw, std::vector<Frame>& out) {
  const int W = plane_.spokes, S = plane_.samples, C = plane_.coils, R = raw.geometry.spokes;
  if (raw.geometry.samples != S || raw.geometry.coils != C)
    throw InputError(fmt::format("a volume's spokes are {} samples x {} coils, the plane expects {} x {}",
                                 raw.geometry.samples, raw.geometry.coils, S, C));
  VolumeLayout& l = layout_;
  volume_layout(
      raw.spoke_index, raw.partition, W, P_,
      [&](int a, int b) {
        return same_line(raw.traj.data() + std::size_t(a) * S * 2, raw.traj.data() + std::size_t(b) * S * 2,
                         S);
      },
      l);
  prepare_host();
  Counts counts;
  counts.first_step = l.steps.front();
  counts.last_step = l.steps.back();
  counts.missing = l.missing;
  const Geometry shape = batched_ ? batched_geometry(plane_, P_) : plane_;
  out.resize(batched_ ? 1 : std::size_t(P_));
  for (auto& f : out)
    if (f.geometry.spokes != W || f.geometry.samples != S || f.geometry.coils != shape.coils)
      f = Frame(shape);
  // With every (step, partition) there, every value is written below; only a lost spoke leaves zeros.
  if (l.missing > 0) std::memset(static_cast<void*>(kz_.data()), 0, kz_.size() * sizeof(cfloat));
  for (int r = 0; r < R; ++r) {
    const int j = l.slot_of[std::size_t(r)];
    if (j < 0) continue;
    const int p = raw.partition[std::size_t(r)];
    const cfloat w = pre_[std::size_t(p)];
    for (int c = 0; c < C; ++c) {
      const cfloat* in = raw.data.data() + (std::size_t(c) * R + r) * S;
      cfloat* o = kz_.data() + ((std::size_t(c) * W + j) * S) * P_ + p;
      for (int s = 0; s < S; ++s) o[std::size_t(s) * P_] = w * in[s];
    }
  }
  plan_.execute(kz_.data());
  for (int j = 0; j < W; ++j) {  // every z position shares the in-plane trajectory
    const int r = volume_line(l, j);
    for (auto& f : out) {
      std::memcpy(f.traj.data() + std::size_t(j) * S * 2, raw.traj.data() + std::size_t(r) * S * 2,
                  std::size_t(S) * 2 * sizeof(float));
      f.spoke_index[std::size_t(j)] = j < int(l.steps.size()) ? l.steps[std::size_t(j)] : 0;
    }
  }
  const std::size_t lines = std::size_t(C) * W * S;
#pragma omp parallel for schedule(static)
  for (int z = 0; z < P_; ++z) {  // z position z's coils: a frame of its own, or its block of the one frame
    cfloat* dst = batched_ ? out[0].data.data() + std::size_t(z) * lines : out[std::size_t(z)].data.data();
    const cfloat w = post_[std::size_t(z)];
    for (std::size_t m = 0; m < lines; ++m) dst[m] = w * kz_[m * std::size_t(P_) + std::size_t(z)];
  }
  for (auto& f : out) {
    f.last_acquired_ns = raw.last_acquired_ns;
    f.last_arrival_ns = raw.last_arrival_ns;
  }
  return counts;
}

int volume_line(const VolumeLayout& l, int j) {
  // A slot no spoke came for (a window holding fewer steps) borrows the first slot's line: its data are
  // zeros.
  if (l.line_of[std::size_t(j)] >= 0) return l.line_of[std::size_t(j)];
  return l.line_of[0] >= 0 ? l.line_of[0] : 0;
}

VolumeChain::VolumeChain(const ReconParams& params, Backend backend, const Registry& registry)
    : params_(params), backend_(backend), registry_(registry) {}

void VolumeChain::configure(const Geometry& plane, int partitions) {
  const auto t0 = std::chrono::steady_clock::now();
  struct Said {  // the set-up's time in the debug log, whichever way configure() ends
    std::chrono::steady_clock::time_point t0;
    ~Said() {
      log::debug("volume: configured in {:.1f} ms",
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  } said{t0};
  const bool batched = batches_partitions(params_);
  assembler_.configure(plane, partitions, batched);
  const bool joint = params_.method == ReconMethod::CgSense && volume_sense_refusal(params_.cg).empty();
  if (joint) {
    chains_.clear();
    if (!sense_) sense_ = std::make_unique<VolumeSenseLive>(params_, backend_);
    sense_->configure(plane, partitions);
    plane_ = plane;
    volume_.assign(std::size_t(partitions) * plane.matrix * plane.matrix, cfloat());
    return;
  }
  sense_.reset();
  const int n = batched ? 1 : partitions;
  if (int(chains_.size()) != n) {
    chains_.clear();
    for (int z = 0; z < n; ++z) {
      chains_.push_back(std::make_unique<ReconChain>(params_, backend_, registry_));
      chains_.back()->set_live_maps(true);
    }
  }
  if (batched)
    chains_[0]->configure(batched_geometry(plane, partitions));
  else
    configure_all(plane);
  plane_ = plane;
  volume_.assign(std::size_t(partitions) * plane.matrix * plane.matrix, cfloat());
}

VolumeChain::~VolumeChain() = default;

void VolumeChain::configure_all(const Geometry& plane) {
  // The z positions' chains are configured side by side: each plans its FFTs and NUFFT on its own (32 of them
  // one after the other took 1.07 s on an H200 host: 21 volumes of a 20/s stream passed over before the
  // first). Each thread works on the caller's GPU and hands back what it threw.
  const int device = backend_ == Backend::Cuda ? gpu::current_device() : -1;
  const int n = int(chains_.size());
  const int threads = std::clamp(int(std::thread::hardware_concurrency()) / 2, 1, std::min(8, n));
  std::vector<std::exception_ptr> failed(static_cast<std::size_t>(threads));
  std::atomic<int> next{0};
  auto work = [&](int k) {
    try {
      std::unique_ptr<gpu::DeviceGuard> on;
      if (device >= 0) on = std::make_unique<gpu::DeviceGuard>(device);
      for (int z = next++; z < n; z = next++) chains_[std::size_t(z)]->configure(plane);
    } catch (...) {
      failed[std::size_t(k)] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int k = 1; k < threads; ++k) pool.emplace_back(work, k);
  work(0);
  for (auto& t : pool) t.join();
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
}

void VolumeChain::collect(std::size_t z, View<const cfloat> img) {
  const std::size_t px = std::size_t(plane_.matrix) * plane_.matrix;
  if (img.size() != (assembler_.batched() ? volume_.size() : px))
    throw InputError(fmt::format("volume: z position {} gave an image of {} pixels", z, img.size()));
  std::copy(img.data, img.data + img.size(), volume_.begin() + long(z * px));
  for (const auto& t : chains_[z]->timings()) {
    auto it = std::find_if(timings_.begin(), timings_.end(),
                           [&](const StageTiming& s) { return s.stage == t.stage; });
    if (it == timings_.end())
      timings_.push_back(t);
    else
      it->ms += t.ms;
  }
}

View<const cfloat> VolumeChain::volume_view() const {
  return {volume_.data(), Extents{std::size_t(assembler_.partitions()), std::size_t(plane_.matrix),
                                  std::size_t(plane_.matrix)}};
}

void VolumeChain::note_rotated(const RotatedPartitions& e) {
  rotated_ = true;
  const bool sense = params_.method == ReconMethod::CgSense && !params_.cg.sens.empty();
  log::info("volume: {}: the volumes go through the 3D NUFFT from now on (the window on the host; {})",
            e.what(),
            params_.method == ReconMethod::Gridding ? "gridding"
            : sense                                 ? "cg-sense with recon.sens on the CPU"
                    : to_string(params_.method) + " needs one 2D problem per z position: refused");
  if (sense)
    rotated_maps_ = read_volume_maps(params_.cg.sens, plane_.matrix, assembler_.partitions(), plane_.coils);
}

View<const cfloat> VolumeChain::reconstruct_rotated(const Frame& raw) {
  const auto t0 = std::chrono::steady_clock::now();
  volume_ = reconstruct_rotated_window(raw, plane_.matrix, assembler_.partitions(), params_, rotated_maps_);
  counts_ = {};
  const auto [lo, hi] = std::minmax_element(raw.spoke_index.begin(), raw.spoke_index.end());
  if (lo != raw.spoke_index.end()) counts_ = {*lo, *hi, 0};
  timings_.clear();
  timings_.push_back(
      {"rotated_3d",
       std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()});
  return volume_view();
}

View<const cfloat> VolumeChain::reconstruct(const Frame& raw) {
  if (!rotated_) {
    try {
      counts_ = assembler_.assemble(raw, frames_);
    } catch (const RotatedPartitions& e) {
      note_rotated(e);
    }
  }
  if (rotated_) return reconstruct_rotated(raw);
  timings_.clear();
  if (sense_) {
    const auto t0 = std::chrono::steady_clock::now();
    sense_->reconstruct(frames_, volume_);
    timings_.push_back(
        {"cg_sense",
         std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()});
    return volume_view();
  }
  for (std::size_t z = 0; z < chains_.size(); ++z) collect(z, chains_[z]->reconstruct(frames_[z]));
  return volume_view();
}

View<const cfloat> VolumeChain::reconstruct_device(int raw_spokes, const Gather& gather,
                                                   const std::function<void()>& release) {
  if (backend_ != Backend::Cuda) throw ConfigError("a volume from the GPU's ring needs the cuda backend");
  const int P = assembler_.partitions();
  if (!device_)
    device_ = std::make_unique<VolumeAssemblerCuda>(plane_, P,
                                                    sense_ ? gpu::current_device() : chains_[0]->device());
  const auto t0 = std::chrono::steady_clock::now();
  if (rotated_) return {};
  try {
    if (!device_->assemble(raw_spokes, gather, heads_, counts_)) return {};
  } catch (const RotatedPartitions& e) {
    note_rotated(e);  // the caller copies this window to the host (reconstruct)
    return {};
  }
  release();  // the window is in the assembler's own buffers now
  timings_.clear();
  timings_.push_back(
      {"volume_assembly",
       std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()});
  if (sense_) {
    const auto t1 = std::chrono::steady_clock::now();
    const bool host = sense_->wants_host_frames();
    if (host) {  // its maps are estimated from them
      frames_.resize(std::size_t(P));
      for (int z = 0; z < P; ++z) {
        Frame& f = frames_[std::size_t(z)];
        if (f.geometry.spokes != plane_.spokes) f = Frame(plane_);
        device_->download(z, f);
      }
    }
    sense_->reconstruct_device(device_->frame(0), device_->traj(), host ? &frames_ : nullptr, volume_);
    timings_.push_back(
        {"cg_sense",
         std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count()});
    return volume_view();
  }
  // The batched chain takes every z position's block at once ([P][coils][W][S] is contiguous).
  const std::size_t block = device_->frame_values() * (assembler_.batched() ? std::size_t(P) : 1);
  frames_.resize(chains_.size());
  for (std::size_t z = 0; z < chains_.size(); ++z) {
    // A chain that estimates its coil maps reads the frame on the host too.
    const Frame* host = nullptr;
    if (chains_[z]->wants_host_frame()) {  // never batched: rss and fbp read no maps
      Frame& f = frames_[z];
      if (f.geometry.spokes != plane_.spokes) f = Frame(plane_);
      device_->download(int(z), f);
      host = &f;
    }
    const View<const cfloat> img = chains_[z]->reconstruct_device(
        [&](cfloat* d_data, float* d_traj, gpu::StreamRef stream) {
          gpu::copy_device(d_data, device_->frame(int(z)), block * sizeof(cfloat), stream);
          gpu::copy_device(d_traj, device_->traj(), device_->traj_values() * sizeof(float), stream);
          return true;
        },
        host);
    collect(z, img);
  }
  return volume_view();
}

}  // namespace radstream
