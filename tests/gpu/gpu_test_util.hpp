// Shared by the GPU tests: the skip-or-fail guard, relative error, and running one registered stage on either
// backend.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/trajectory.hpp"
#include "gpu/cuda_runtime.hpp"
#include "gpu/device_memory.hpp"
#include "io/frame_io.hpp"
#include "recon/recon_chain.hpp"
#include "sim/simulator.hpp"
#include "test_util.hpp"

#define RADSTREAM_REQUIRE_GPU()                                                                     \
  do {                                                                                              \
    const auto avail = radstream::gpu::query();                                                     \
    const bool ok = avail.available && radstream::gpu::cuda_stages_built();                         \
    if (!ok) {                                                                                      \
      const std::string why = avail.available ? "CUDA stages not built" : avail.reason;             \
      if (radstream::test::env_flag("RADSTREAM_REQUIRE_GPU")) FAIL() << "no usable GPU: " << why;   \
      GTEST_SKIP() << "no usable GPU (" << why << "); set RADSTREAM_REQUIRE_GPU=1 to fail instead"; \
    }                                                                                               \
  } while (0)

namespace radstream::gputest {

using namespace radstream;

using test::rel_error;

// The analytic phantom (matrix N, C coils, k-space SNR) as one frame of its first `spokes` golden-angle
// spokes.
inline Frame phantom_frame(int matrix, int coils, double snr, int spokes) {
  SimParams s;
  s.matrix = matrix;
  s.coils = coils;
  s.snr = snr;
  const Simulator sim(s);
  return frame_from_spokes(sim.header(), sim.spokes(0, spokes));
}

struct StageRun {
  Geometry g;
  std::vector<cfloat> in;
  std::vector<float> traj;
  Extents in_ext;
};

template <class T>
DeviceBuffer<T> upload(const std::vector<T>& v, gpu::StreamRef stream) {
  DeviceBuffer<T> d(Extents{v.size()});
  gpu::copy_to_device(d.data(), v.data(), v.size() * sizeof(T), stream);
  return d;
}

template <class T>
std::vector<T> download(const DeviceBuffer<T>& d, gpu::StreamRef stream) {
  std::vector<T> v(d.size());
  gpu::copy_to_host(v.data(), d.data(), v.size() * sizeof(T), stream);
  gpu::synchronize(stream);
  return v;
}

// Runs one registered stage on the given backend; returns its output on the host.
inline std::vector<cfloat> run_stage(const std::string& name, Backend b, const ReconParams& p,
                                     const StageRun& r) {
  const Registry reg = default_registry();
  auto stage = reg.create(name, b, p);
  Context ctx;
  ctx.backend = b;
  if (b == Backend::Cpu) {
    const Extents out_ext = stage->configure(r.g, r.in_ext, ctx);
    HostBuffer<cfloat> in(r.in_ext), out(out_ext);
    std::copy(r.in.begin(), r.in.end(), in.begin());
    HostBuffer<float> traj(Extents{r.traj.size()});
    std::copy(r.traj.begin(), r.traj.end(), traj.begin());
    FrameContext frame;
    frame.traj = View<const float>{traj.data(), Extents{r.traj.size()}, Location::Host};
    SpokeLineSet lines;  // what the chain derives once per frame
    if (stage->spec().spoke_lines) {
      lines.resize(r.g.spokes);
      lines.fit(frame.traj.span(), r.g.samples);
      frame.lines = &lines;
    }
    std::unique_ptr<NufftPlanCpu> plan;
    if (stage->spec().point_plan) {
      const int G = oversampled_grid_size(r.g.matrix, p.gridding.oversampling);
      plan = std::make_unique<NufftPlanCpu>(2, std::array<int, 3>{G, G, 1}, p.gridding.kernel(),
                                            r.traj.size() / 2);
      plan->set_points(r.traj.data(), r.traj.size() / 2);
      frame.cpu_plan = plan.get();
    }
    stage->process(frame, in.view(), stage->spec().in_place ? in.view() : out.view(), ctx);
    const auto& res = stage->spec().in_place ? in : out;
    return std::vector<cfloat>(res.begin(), res.end());
  }
  gpu::Stream stream;
  ctx.stream = stream.get();
  std::vector<cfloat> result;
  {
    const Extents out_ext = stage->configure(r.g, r.in_ext, ctx);
    DeviceBuffer<cfloat> in(r.in_ext), out(out_ext);
    DeviceBuffer<float> traj(Extents{r.traj.size()});
    gpu::copy_to_device(in.data(), r.in.data(), r.in.size() * sizeof(cfloat), ctx.stream);
    gpu::copy_to_device(traj.data(), r.traj.data(), r.traj.size() * sizeof(float), ctx.stream);
    View<cfloat> o = out.view();
    FrameContext frame;
    frame.traj = traj.view();
    DeviceBuffer<SpokeLine> d_lines;  // what the chain derives once per frame
    if (stage->spec().spoke_lines) {
      d_lines = DeviceBuffer<SpokeLine>(Extents{std::size_t(r.g.spokes)});
      fit_spoke_lines_cuda(traj.data(), r.g.spokes, r.g.samples, d_lines.data(), ctx.stream);
      frame.d_lines = d_lines.data();
    }
    std::unique_ptr<NufftPlanCuda> plan;
    if (stage->spec().point_plan) {
      const int G = oversampled_grid_size(r.g.matrix, p.gridding.oversampling);
      plan = std::make_unique<NufftPlanCuda>(G, p.gridding.kernel(), r.traj.size() / 2, ctx.stream);
      plan->set_points(traj.data(), r.traj.size() / 2);
      frame.cuda_plan = plan.get();
    }
    stage->process(frame, in.view(), o, ctx);
    result.resize(out_ext.size());
    gpu::copy_to_host(result.data(), o.data, result.size() * sizeof(cfloat), ctx.stream);
    gpu::synchronize(ctx.stream);
    stage.reset();
  }
  return result;
}

// n uniform random points in [-0.5, 0.5)^dims (cycles per pixel), [n][dims].
inline std::vector<float> random_points(std::size_t n, int dims, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> k(-0.5f, 0.5f);
  std::vector<float> t(std::size_t(dims) * n);
  for (auto& v : t) v = k(rng);
  return t;
}

// A stream the test owns, and its handle.
struct TestStream {
  gpu::Stream owned;
  gpu::StreamRef s = owned.get();
};

inline StageRun random_radial(int N, int S, int P, int C, unsigned seed) {
  StageRun r;
  r.g = Geometry{N, S, P, C, float(S) / N};
  AngleSpec a;
  r.traj.resize(std::size_t(P) * S * 2);
  for (int p = 0; p < P; ++p)
    spoke_coordinates(a.angle(p), S, std::span<float>(r.traj.data() + std::size_t(p) * S * 2, S * 2));
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  r.in.resize(std::size_t(C) * P * S);
  for (auto& v : r.in) v = cfloat(d(rng), d(rng));
  r.in_ext = Extents{std::size_t(C), std::size_t(P), std::size_t(S)};
  return r;
}

inline ReconParams params() {
  ReconParams p;
  p.fft.planner = FftPlanner::Estimate;
  return p;
}

}  // namespace radstream::gputest
