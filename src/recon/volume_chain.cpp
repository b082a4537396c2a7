#include "recon/volume_chain.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/math.hpp"

namespace radstream {

void VolumeAssembler::configure(const Geometry& plane, int partitions) {
  if (partitions < 1) throw ConfigError(fmt::format("partitions = {} must be >= 1", partitions));
  plane_ = plane;
  P_ = partitions;
  const std::size_t lines = std::size_t(plane.coils) * plane.spokes * plane.samples;
  kz_ = HostBuffer<cfloat>(Extents{lines, std::size_t(P_)});
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

VolumeAssembler::Counts VolumeAssembler::assemble(const Frame& raw, std::vector<Frame>& out) {
  const int W = plane_.spokes, S = plane_.samples, C = plane_.coils, R = raw.geometry.spokes;
  if (raw.geometry.samples != S || raw.geometry.coils != C)
    throw InputError(fmt::format("a volume's spokes are {} samples x {} coils, the plane expects {} x {}",
                                 raw.geometry.samples, raw.geometry.coils, S, C));
  // The W newest in-plane steps of the window, oldest first.
  std::vector<std::uint64_t> steps(raw.spoke_index.begin(), raw.spoke_index.end());
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  if (steps.empty()) throw InputError("a volume window without spokes");
  if (int(steps.size()) > W) steps.erase(steps.begin(), steps.end() - W);
  Counts counts;
  counts.first_step = steps.front();
  counts.last_step = steps.back();
  out.resize(std::size_t(P_));
  for (auto& f : out)
    if (f.geometry.spokes != W || f.geometry.samples != S || f.geometry.coils != C) f = Frame(plane_);
  std::memset(static_cast<void*>(kz_.data()), 0, kz_.size() * sizeof(cfloat));
  std::vector<int> line_of(std::size_t(W), -1);  // the raw spoke whose trajectory slot j takes
  std::vector<std::uint8_t> have(std::size_t(W) * P_, 0);
  for (int r = 0; r < R; ++r) {
    const auto it = std::lower_bound(steps.begin(), steps.end(), raw.spoke_index[std::size_t(r)]);
    if (it == steps.end() || *it != raw.spoke_index[std::size_t(r)]) continue;  // older than the window
    const int j = int(it - steps.begin()), p = raw.partition[std::size_t(r)];
    if (p >= P_) continue;  // the intake refuses these; never index past the volume
    const float* t = raw.traj.data() + std::size_t(r) * S * 2;
    if (line_of[std::size_t(j)] < 0)
      line_of[std::size_t(j)] = r;
    else if (!same_line(t, raw.traj.data() + std::size_t(line_of[std::size_t(j)]) * S * 2, S))
      throw InputError(fmt::format(
          "spoke {} of partition {} lies at another in-plane angle than the same spoke of partition {}: "
          "partitions rotated against each other are not streamed (recon --traj reconstructs them)",
          raw.spoke_index[std::size_t(r)], p, raw.partition[std::size_t(line_of[std::size_t(j)])]));
    have[std::size_t(j) * P_ + p] = 1;
    const cfloat w = pre_[std::size_t(p)];
    for (int c = 0; c < C; ++c) {
      const cfloat* in = raw.data.data() + (std::size_t(c) * R + r) * S;
      cfloat* o = kz_.data() + ((std::size_t(c) * W + j) * S) * P_ + p;
      for (int s = 0; s < S; ++s) o[std::size_t(s) * P_] = w * in[s];
    }
  }
  for (auto h : have) counts.missing += h ? 0 : 1;
  plan_.execute(kz_.data());
  for (int j = 0; j < W; ++j) {  // every z position shares the in-plane trajectory
    const int r = line_of[std::size_t(j)] >= 0 ? line_of[std::size_t(j)] : line_of[0] >= 0 ? line_of[0] : 0;
    for (auto& f : out) {
      std::memcpy(f.traj.data() + std::size_t(j) * S * 2, raw.traj.data() + std::size_t(r) * S * 2,
                  std::size_t(S) * 2 * sizeof(float));
      f.spoke_index[std::size_t(j)] = j < int(steps.size()) ? steps[std::size_t(j)] : 0;
    }
  }
#pragma omp parallel for schedule(static)
  for (int z = 0; z < P_; ++z) {
    Frame& f = out[std::size_t(z)];
    const cfloat w = post_[std::size_t(z)];
    const std::size_t lines = std::size_t(C) * W * S;
    for (std::size_t m = 0; m < lines; ++m) f.data[m] = w * kz_[m * std::size_t(P_) + std::size_t(z)];
    f.last_acquired_ns = raw.last_acquired_ns;
    f.last_arrival_ns = raw.last_arrival_ns;
  }
  return counts;
}

VolumeChain::VolumeChain(const ReconParams& params, Backend backend, const Registry& registry)
    : params_(params), backend_(backend), registry_(registry) {}

void VolumeChain::configure(const Geometry& plane, int partitions) {
  assembler_.configure(plane, partitions);
  if (int(chains_.size()) != partitions) {
    chains_.clear();
    for (int z = 0; z < partitions; ++z) {
      chains_.push_back(std::make_unique<ReconChain>(params_, backend_, registry_));
      chains_.back()->set_live_maps(true);
    }
  }
  for (auto& c : chains_) c->configure(plane);
  plane_ = plane;
  volume_.assign(std::size_t(partitions) * plane.matrix * plane.matrix, cfloat());
}

View<const cfloat> VolumeChain::reconstruct(const Frame& raw) {
  counts_ = assembler_.assemble(raw, frames_);
  const std::size_t px = std::size_t(plane_.matrix) * plane_.matrix;
  timings_.clear();
  for (std::size_t z = 0; z < chains_.size(); ++z) {
    const View<const cfloat> img = chains_[z]->reconstruct(frames_[z]);
    std::copy(img.data, img.data + px, volume_.begin() + long(z * px));
    for (const auto& t : chains_[z]->timings()) {
      auto it = std::find_if(timings_.begin(), timings_.end(),
                             [&](const StageTiming& s) { return s.stage == t.stage; });
      if (it == timings_.end())
        timings_.push_back(t);
      else
        it->ms += t.ms;
    }
  }
  return {volume_.data(),
          Extents{std::size_t(chains_.size()), std::size_t(plane_.matrix), std::size_t(plane_.matrix)}};
}

}  // namespace radstream
