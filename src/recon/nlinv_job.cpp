#include "recon/nlinv_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "io/cfl.hpp"
#include "nlinv/nlinv_cpu.hpp"
#include "nlinv/nlinv_cuda.hpp"
#include "recon/backend.hpp"

namespace radstream {

namespace {

constexpr int kTimeDim = 10;

// The product of the extents of dims [from, to).
long extent(const CflArray& a, int from, int to) {
  long n = 1;
  for (int d = from; d < to; ++d) n *= a.dim(d);
  return n;
}

void check_layouts(const NlinvJob& job, const CflArray& t, const CflArray& k) {
  if (t.dim(0) != 3)
    throw InputError(
        fmt::format("{}: the trajectory's first dimension is {}, not 3 (kx, ky, kz)", job.traj, t.dim(0)));
  if (k.dim(0) != 1)
    throw InputError(
        fmt::format("{}: the k-space's first dimension is {}; BART's rtnlinv layout is [1 samples "
                    "spokes coils 1 ... frames]",
                    job.kspace, k.dim(0)));
  if (k.dim(1) != t.dim(1) || k.dim(2) != t.dim(2))
    throw InputError(fmt::format("{} has {} samples x {} spokes, the trajectory {} x {}", job.kspace,
                                 k.dim(1), k.dim(2), t.dim(1), t.dim(2)));
  for (int d = 3; d < 16; ++d)
    if (d != kTimeDim && t.dim(d) != 1)
      throw InputError(fmt::format("{}: dimension {} is {}; only the turns (dimension 10) may be > 1",
                                   job.traj, d, t.dim(d)));
  for (int d = 4; d < 16; ++d)
    if (d != kTimeDim && k.dim(d) != 1)
      throw InputError(fmt::format("{}: dimension {} is {}; only coils (3) and frames (10) may be > 1",
                                   job.kspace, d, k.dim(d)));
}

int matrix_of(const NlinvJob& job, const CflArray& t) {
  if (job.matrix > 0) {
    if (job.matrix % 2) throw ConfigError(fmt::format("--matrix {}: nlinv needs an even matrix", job.matrix));
    return job.matrix;
  }
  double kmax = 0;
  for (std::size_t i = 0; i < t.data.size(); i += 3)
    for (int a = 0; a < 2; ++a) {
      const float v = (a == 0 ? t.data[i] : t.data[i + 1]).real();
      if (!std::isfinite(v))
        throw InputError(fmt::format("{}: coordinate {} is not finite", job.traj, i / 3));
      kmax = std::max(kmax, double(std::abs(v)));
    }
  const int n = 2 * int(std::ceil(kmax - 1e-6));
  if (n < 2)
    throw InputError(
        fmt::format("{}: the coordinates span |k| <= {}; no image matrix follows", job.traj, kmax));
  return n;
}

// A frame of host data through the engine of either backend.
class FrameSolver {
 public:
  virtual ~FrameSolver() = default;
  virtual NlinvFrameReport frame(std::size_t turn, const cfloat* samples, cfloat* out) = 0;
  virtual int grid() = 0;
  virtual int coil_maps(std::vector<cfloat>& host) = 0;
  virtual const Irgnm::Progress& progress() = 0;  // the frame's solve in progress (another thread reads it)
};

class HostFrames final : public FrameSolver {
 public:
  HostFrames(int n, int coils, std::size_t points, const NlinvParams& p, int threads, FftPlanner planner,
             const std::vector<std::vector<float>>& traj)
      : nlinv_(n, coils, points, p, threads, planner), traj_(traj) {}
  NlinvFrameReport frame(std::size_t turn, const cfloat* samples, cfloat* out) override {
    return nlinv_.reconstruct(traj_[turn].data(), samples, out);
  }
  int grid() override { return nlinv_.model().grid(); }
  int coil_maps(std::vector<cfloat>& host) override { return nlinv_.coil_maps(host); }
  const Irgnm::Progress& progress() override { return nlinv_.irgnm().progress(); }

 private:
  NlinvCpu nlinv_;
  const std::vector<std::vector<float>>& traj_;
};

class CudaFrames final : public FrameSolver {
 public:
  CudaFrames(int n, int coils, std::size_t points, const NlinvParams& p,
             const std::vector<std::vector<float>>& traj, std::size_t frame_values)
      : n_(n), points_(points) {
    engine_ = make_nlinv_cuda_engine(n, coils, points, p, stream_.get());
    d_traj_ = DeviceBuffer<float>(Extents{traj.size() * points * 2});
    for (std::size_t t = 0; t < traj.size(); ++t)
      gpu::copy_to_device(d_traj_.data() + t * points * 2, traj[t].data(), points * 2 * sizeof(float),
                          stream_.get());
    d_samples_ = DeviceBuffer<cfloat>(Extents{frame_values});
    d_out_ = DeviceBuffer<cfloat>(Extents{std::size_t(n) * n});
  }
  NlinvFrameReport frame(std::size_t turn, const cfloat* samples, cfloat* out) override {
    gpu::copy_to_device(d_samples_.data(), samples, d_samples_.size() * sizeof(cfloat), stream_.get());
    const auto rep =
        engine_->reconstruct(d_traj_.data() + turn * points_ * 2, d_samples_.data(), d_out_.data());
    gpu::copy_to_host(out, d_out_.data(), d_out_.size() * sizeof(cfloat), stream_.get());
    gpu::synchronize(stream_.get());
    return rep;
  }
  int grid() override { return engine_->model().grid(); }
  int coil_maps(std::vector<cfloat>& host) override { return engine_->coil_maps(host); }
  const Irgnm::Progress& progress() override { return engine_->irgnm().progress(); }

 private:
  int n_;
  std::size_t points_;
  gpu::Stream stream_;
  std::unique_ptr<NlinvSolver> engine_;
  DeviceBuffer<float> d_traj_;
  DeviceBuffer<cfloat> d_samples_, d_out_;
};

}  // namespace

void run_nlinv_job(const NlinvJob& job, const ReconParams& params) {
  if (job.traj.empty() || job.kspace.empty())
    throw ConfigError("--method nlinv reads --traj T.cfl and --kspace K.cfl (BART's rtnlinv layouts)");
  if (job.out.empty()) throw ConfigError("--method nlinv needs --out X.cfl");
  const NlinvImages r =
      reconstruct_nlinv(job, read_cfl(job.traj), read_cfl(job.kspace), params, !job.sens_out.empty());
  write_cfl(job.out, r.dims, r.images);
  if (!job.sens_out.empty()) {
    write_cfl(job.sens_out, {r.dims[0], r.dims[1], 1, r.coils}, r.coil_maps);
    log::info("nlinv: wrote the last frame's {} coil sensitivities to {}", r.coils, job.sens_out);
  }
  log::info("nlinv: wrote {} ({} frame(s)), median {:.1f} ms per frame", job.out, r.dims[kTimeDim],
            r.median_ms);
}

NlinvImages reconstruct_nlinv(const NlinvJob& job, const CflArray& t, const CflArray& k,
                              const ReconParams& params, bool want_maps) {
  check_layouts(job, t, k);
  const int n = matrix_of(job, t);
  const long samples = k.dim(1), spokes = k.dim(2), coils = k.dim(3);
  const long frames = k.dim(kTimeDim), turns = t.dim(kTimeDim);
  const std::size_t points = std::size_t(samples * spokes);
  const long frame_values = extent(k, 0, 4);
  // The trajectory per turn in cycles per pixel, [points][2].
  std::vector<std::vector<float>> traj(std::size_t(turns), std::vector<float>(points * 2));
  for (long turn = 0; turn < turns; ++turn)
    for (std::size_t i = 0; i < points; ++i)
      for (int a = 0; a < 2; ++a) {
        const float v = t.data[std::size_t(turn) * points * 3 + i * 3 + std::size_t(a)].real();
        if (!std::isfinite(v))
          throw InputError(fmt::format("{}: turn {} point {} is not finite", job.traj, turn, i));
        traj[std::size_t(turn)][i * 2 + std::size_t(a)] = v / float(n);
      }
  const BackendDecision backend = resolve_backend(params.backend);
  log::info("nlinv: {}", backend.reason);
  std::unique_ptr<FrameSolver> solver;
  if (backend.backend == Backend::Cuda)
    solver =
        std::make_unique<CudaFrames>(n, int(coils), points, params.nlinv, traj, std::size_t(frame_values));
  else
    solver = std::make_unique<HostFrames>(n, int(coils), points, params.nlinv, params.threads,
                                          params.fft.planner, traj);
  std::vector<cfloat> out(std::size_t(n) * n * std::size_t(frames));
  log::info(
      "nlinv: {} frame(s) of {} spokes x {} samples x {} coils -> {}x{} on a {}x{} grid, {} Newton steps",
      frames, spokes, samples, coils, n, n, solver->grid(), solver->grid(), params.nlinv.newton);
  std::vector<double> ms;
  Heartbeat beat("nlinv");  // a frame can take a minute on a CPU: a line at least every 1.5 s meanwhile
  const Irgnm::Progress& progress = solver->progress();
  for (long f = 0; f < frames; ++f) {
    const cfloat* s = k.data.data() + std::size_t(f * frame_values);
    for (long i = 0; i < frame_values; ++i)
      if (!std::isfinite(s[i].real()) || !std::isfinite(s[i].imag()))
        throw InputError(
            fmt::format("{}: frame {} holds a sample that is not finite (index {})", job.kspace, f, i));
    beat.doing(fmt::format("reconstructing frame {}/{}", f + 1, frames), [&progress, &params] {
      return fmt::format("Newton step {} of {}, {} CG iterations done", progress.newton_step.load(),
                         params.nlinv.newton, progress.cg_iterations.load());
    });
    const auto t0 = std::chrono::steady_clock::now();
    const auto rep = solver->frame(std::size_t(f % turns), s, out.data() + std::size_t(f) * n * n);
    beat.idle();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    log::info("nlinv: frame {}/{}: {:.1f} ms, {} CG iterations over {} Newton steps, residual {:.4g}", f + 1,
              frames, ms.back(), rep.irgnm.cg_iterations, rep.irgnm.newton_steps, rep.irgnm.final_residual);
    const cfloat* img = out.data() + std::size_t(f) * n * n;
    const std::size_t bad = std::size_t(std::count_if(img, img + std::size_t(n) * n, [](const cfloat& v) {
      return !std::isfinite(v.real()) || !std::isfinite(v.imag());
    }));
    if (bad)  // never written as an image
      throw NumericError(
          fmt::format("nlinv: frame {} gave {} non-finite pixels (residual {:.4g}); nothing written", f + 1,
                      bad, rep.irgnm.final_residual));
  }
  NlinvImages r;
  r.dims.assign(16, 1);
  r.dims[0] = n;
  r.dims[1] = n;
  r.dims[kTimeDim] = frames;
  r.images = std::move(out);
  if (want_maps) r.coils = solver->coil_maps(r.coil_maps);
  std::sort(ms.begin(), ms.end());
  r.median_ms = ms[ms.size() / 2];
  return r;
}

}  // namespace radstream
