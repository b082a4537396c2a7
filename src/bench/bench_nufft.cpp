// radstream bench's NUFFT cases (bench_nufft.hpp): one operator on the case's backend, timed per direction,
// its outputs held against the exact NUDFT in double on a fixed sample of output indices.
#include "bench/bench_nufft.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <sstream>

#include "bench/bench_cg.hpp"
#include "bench/bench_stages.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "sim/nudft.hpp"
#ifdef RADSTREAM_HAVE_CUDA
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "noncart/nufft_operator_cuda.hpp"
#endif

namespace radstream::app {

NufftGeometry radial_nufft_geometry(int matrix, int samples, int spokes) {
  const Frame f = bench_frame(matrix, samples, 1, spokes);
  NufftGeometry g{fmt::format("radial {}x{} -> {}^2", spokes, samples, matrix), 2, {matrix, matrix, 1}, {}};
  g.traj.assign(f.traj.data(), f.traj.data() + f.traj.size());
  return g;
}

NufftGeometry random_nufft_geometry(int dims, int N, std::size_t points, unsigned seed) {
  NufftGeometry g{fmt::format("random {} -> {}^{}", points, N, dims), dims, {N, N, dims > 2 ? N : 1}, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> k(-0.5f, 0.5f);
  g.traj.resize(points * std::size_t(dims));
  for (auto& v : g.traj) v = k(rng);
  return g;
}

namespace {

std::size_t image_size(const NufftGeometry& g) {
  return std::size_t(g.matrix[0]) * g.matrix[1] * g.matrix[2];
}

// One NUFFT operator on a backend with its inputs in place (the image for forward, the samples for
// adjoint, batch items each), timed per call.
class Transform {
 public:
  Transform(const NufftGeometry& g, int batch, const NufftKernel& k, Backend b,
            const std::vector<cfloat>& image, const std::vector<cfloat>& samples)
      : g_(g), image_(image), samples_(samples) {
    if (b == Backend::Cpu) {
      cpu_ = std::make_unique<NufftOperatorCpu>(g.dims, g.matrix, batch, g.points(), k);
      y_.resize(samples.size());
      x_.resize(image.size());
      return;
    }
#ifdef RADSTREAM_HAVE_CUDA
    gpu_ = std::make_unique<Gpu>();
    Gpu& d = *gpu_;
    const auto s = d.stream.get();
    d.op = std::make_unique<NufftOperatorCuda>(g.dims, g.matrix, batch, g.points(), k, s);
    d.traj = DeviceBuffer<float>(Extents{g.traj.size()});
    d.x = DeviceBuffer<cfloat>(Extents{image.size()});
    d.y = DeviceBuffer<cfloat>(Extents{samples.size()});
    d.x_in = DeviceBuffer<cfloat>(Extents{image.size()});
    d.y_in = DeviceBuffer<cfloat>(Extents{samples.size()});
    gpu::copy_to_device(d.traj.data(), g.traj.data(), g.traj.size() * sizeof(float), s);
    gpu::copy_to_device(d.x_in.data(), image.data(), image.size() * sizeof(cfloat), s);
    gpu::copy_to_device(d.y_in.data(), samples.data(), samples.size() * sizeof(cfloat), s);
    gpu::synchronize(s);
#else
    throw ConfigError("bench: this build has no CUDA backend");
#endif
  }

  double set_points() {
    return timed([&] {
      if (cpu_) {
        cpu_->set_points(g_.traj.data());
      } else {
#ifdef RADSTREAM_HAVE_CUDA
        gpu_->op->set_points(gpu_->traj.data());
#endif
      }
    });
  }

  // forward: image -> samples; else adjoint: samples -> image.
  double run(bool forward) {
    return timed([&] {
      if (cpu_) {
        if (forward)
          cpu_->forward(image_.data(), y_.data());
        else
          cpu_->adjoint(samples_.data(), x_.data());
      } else {
#ifdef RADSTREAM_HAVE_CUDA
        if (forward)
          gpu_->op->forward(gpu_->x_in.data(), gpu_->y.data());
        else
          gpu_->op->adjoint(gpu_->y_in.data(), gpu_->x.data());
#endif
      }
    });
  }

  // The last output of a direction, on the host.
  std::vector<cfloat> output(bool forward) {
#ifdef RADSTREAM_HAVE_CUDA
    if (gpu_) {
      std::vector<cfloat> out(forward ? samples_.size() : image_.size());
      gpu::copy_to_host(out.data(), forward ? gpu_->y.data() : gpu_->x.data(), out.size() * sizeof(cfloat),
                        gpu_->stream.get());
      gpu::synchronize(gpu_->stream.get());
      return out;
    }
#endif
    return forward ? y_ : x_;
  }

 private:
  template <class F>
  double timed(F&& f) {
#ifdef RADSTREAM_HAVE_CUDA
    if (gpu_) {
      gpu_->start.record(gpu_->stream.get());
      f();
      gpu_->stop.record(gpu_->stream.get());
      gpu_->stop.synchronize();
      return gpu_->stop.ms_since(gpu_->start);
    }
#endif
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  const NufftGeometry& g_;
  const std::vector<cfloat>& image_;
  const std::vector<cfloat>& samples_;
  std::unique_ptr<NufftOperatorCpu> cpu_;
  std::vector<cfloat> x_, y_;
#ifdef RADSTREAM_HAVE_CUDA
  struct Gpu {  // made only for a GPU run (a stream or event needs a device)
    gpu::Stream stream;
    std::unique_ptr<NufftOperatorCuda> op;
    DeviceBuffer<float> traj;
    DeviceBuffer<cfloat> x, y, x_in, y_in;
    gpu::Event start, stop;
  };
  std::unique_ptr<Gpu> gpu_;
#endif
};

// A problem's inputs and the exact outputs at a fixed sample of indices (per batch item).
struct Reference {
  std::vector<cfloat> image, samples;
  std::vector<std::size_t> pixel_sample, point_sample;
  std::vector<std::complex<double>> exact_forward, exact_adjoint;
};

Reference make_reference(const NufftGeometry& g, int batch, std::size_t sample) {
  Reference r;
  std::mt19937 rng(17);
  std::normal_distribution<float> d(0.f, 1.f);
  r.image.resize(std::size_t(batch) * image_size(g));
  for (auto& v : r.image) v = cfloat(d(rng), d(rng));
  r.samples.resize(std::size_t(batch) * g.points());
  for (auto& v : r.samples) v = cfloat(d(rng), d(rng));
  auto pick = [&](std::size_t of) {
    std::vector<std::size_t> v(std::min(sample, of));
    std::uniform_int_distribution<std::size_t> u(0, of - 1);
    for (auto& i : v) i = u(rng);
    return v;
  };
  r.pixel_sample = pick(image_size(g));
  r.point_sample = pick(g.points());
  const auto t0 = std::chrono::steady_clock::now();
  r.exact_forward = forward_nudft_at(g.traj, g.dims, r.image, batch, g.matrix, r.point_sample);
  r.exact_adjoint = adjoint_nudft_at(g.traj, g.dims, r.samples, batch, g.matrix, r.pixel_sample);
  log::info("bench: exact NUDFT of {} at {} points and {} pixels x {} in double: {:.1f} s", g.name,
            r.point_sample.size(), r.pixel_sample.size(), batch,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return r;
}

// ||out - exact|| / ||exact|| on the sampled indices of every batch item.
double sampled_error(const std::vector<cfloat>& out, std::size_t per_item,
                     const std::vector<std::size_t>& idx, const std::vector<std::complex<double>>& exact,
                     int batch) {
  double num = 0, den = 0;
  for (int b = 0; b < batch; ++b)
    for (std::size_t q = 0; q < idx.size(); ++q) {
      const auto e = exact[std::size_t(b) * idx.size() + q];
      num += std::norm(std::complex<double>(out[std::size_t(b) * per_item + idx[q]]) - e);
      den += std::norm(e);
    }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

struct Measured {
  Stats set_points, forward, adjoint;
  double forward_error = 0, adjoint_error = 0;
};

Measured measure(const NufftGeometry& g, int batch, const NufftKernel& k, Backend b, const Reference& r,
                 int frames, int warmup) {
  Transform t(g, batch, k, b, r.image, r.samples);
  std::vector<double> sp, fw, ad;
  for (int i = 0; i < warmup + frames; ++i) {
    const double s = t.set_points();
    const double f = t.run(true);
    const double a = t.run(false);
    if (i < warmup) continue;
    sp.push_back(s);
    fw.push_back(f);
    ad.push_back(a);
  }
  Measured m{stats(sp), stats(fw), stats(ad), 0, 0};
  m.forward_error = sampled_error(t.output(true), g.points(), r.point_sample, r.exact_forward, batch);
  m.adjoint_error = sampled_error(t.output(false), image_size(g), r.pixel_sample, r.exact_adjoint, batch);
  return m;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ','))
    if (!part.empty()) out.push_back(part);
  return out;
}

constexpr std::size_t kSample = 64;  // outputs per batch item held against the exact sums

}  // namespace

nlohmann::ordered_json nufft_case(const BenchCase& c, int frames, int warmup) {
  const NufftGeometry g = radial_nufft_geometry(c.matrix, c.samples, c.spokes);
  const NufftKernel k = c.recon.gridding.kernel();
  const Reference r = make_reference(g, c.coils, kSample);
  const Measured m = measure(g, c.coils, k, c.backend, r, frames, warmup);
  const double pts = double(g.points()) * c.coils;
  log::info(
      "bench {}: {} x {} coils, W{} sigma {:g}: forward {:.4f} ms (error {:.1e}), adjoint {:.4f} ms "
      "({:.1e}), "
      "set_points {:.4f} ms",
      c.name, g.name, c.coils, k.width, k.oversampling, m.forward.median, m.forward_error, m.adjoint.median,
      m.adjoint_error, m.set_points.median);
  return {{"case", c.name},
          {"what", c.what},
          {"kind", "nufft"},
          {"backend", to_string(c.backend)},
          {"geometry", g.name},
          {"coils", c.coils},
          {"width", k.width},
          {"sigma", k.oversampling},
          {"lut_resolution", k.lut_resolution},
          {"forward_ms", json_stats(m.forward)},
          {"adjoint_ms", json_stats(m.adjoint)},
          {"set_points_ms", json_stats(m.set_points)},
          {"forward_relative_error", m.forward_error},
          {"adjoint_relative_error", m.adjoint_error},
          {"forward_points_per_s", pts / (m.forward.median * 1e-3)},
          {"adjoint_points_per_s", pts / (m.adjoint.median * 1e-3)},
          {"error_sample", fmt::format("{} outputs per coil against the exact NUDFT in double", kSample)}};
}

nlohmann::ordered_json nufft_sweep_case(const BenchCase& c, int frames, int warmup) {
  std::vector<NufftGeometry> geometries;
  for (const auto& name : split_list(c.geometries)) {
    if (name == "radial")
      geometries.push_back(radial_nufft_geometry(c.matrix, c.samples, c.spokes));
    else if (name == "random-2d")
      geometries.push_back(random_nufft_geometry(2, c.random_matrix, std::size_t(c.points), 5));
    else if (name == "random-3d")
      geometries.push_back(random_nufft_geometry(3, c.volume, std::size_t(c.points), 6));
    else
      throw ConfigError(
          fmt::format("bench {}: geometry '{}' is not one of radial, random-2d, random-3d", c.name, name));
  }
  nlohmann::ordered_json rows = nlohmann::ordered_json::array(), best = nlohmann::ordered_json::array();
  const double thresholds[] = {1e-3, 1e-4, 1e-5};
  for (const auto& g : geometries) {
    const Reference r = make_reference(g, c.coils, kSample);
    const double pts = double(g.points()) * c.coils;
    nlohmann::ordered_json fastest[2][3];
    for (double sigma : {1.25, 2.0})
      for (int width = 2; width <= 8; ++width) {
        const NufftKernel k{width, sigma, 4096};
        Measured m;
        try {
          m = measure(g, c.coils, k, c.backend, r, frames, warmup);
        } catch (const ConfigError& e) {  // e.g. a width too small for this oversampling
          log::warn("bench {}: {} W{} sigma {:g} skipped: {}", c.name, g.name, width, sigma, e.what());
          continue;
        }
        for (int dir = 0; dir < 2; ++dir) {
          const bool fwd = dir == 0;
          const Stats& s = fwd ? m.forward : m.adjoint;
          const double err = fwd ? m.forward_error : m.adjoint_error;
          nlohmann::ordered_json row = {{"direction", fwd ? "forward (type 2)" : "adjoint (type 1)"},
                                        {"geometry", g.name},
                                        {"dims", g.dims},
                                        {"coils", c.coils},
                                        {"width", width},
                                        {"sigma", sigma},
                                        {"relative_error", err},
                                        {"ms", s.median},
                                        {"ms_p90", s.p90},
                                        {"set_points_ms", m.set_points.median},
                                        {"points_per_s", pts / (s.median * 1e-3)}};
          log::info("bench {}: {} {} W{} sigma {:g}: {:.4f} ms, error {:.2e}", c.name, g.name,
                    row["direction"].get<std::string>(), width, sigma, s.median, err);
          for (int t = 0; t < 3; ++t)
            if (err <= thresholds[t] &&
                (fastest[dir][t].is_null() || s.median < fastest[dir][t]["ms"].get<double>()))
              fastest[dir][t] = row;
          rows.push_back(std::move(row));
        }
      }
    for (int dir = 0; dir < 2; ++dir)
      for (int t = 0; t < 3; ++t) {
        nlohmann::ordered_json b = {{"geometry", g.name},
                                    {"direction", dir == 0 ? "forward (type 2)" : "adjoint (type 1)"},
                                    {"error_at_most", thresholds[t]}};
        if (fastest[dir][t].is_null()) {
          b["setting"] = nullptr;
        } else {
          for (const char* key : {"width", "sigma", "relative_error", "ms", "points_per_s"})
            b[key] = fastest[dir][t][key];
        }
        best.push_back(std::move(b));
      }
  }
  return {{"case", c.name},
          {"what", c.what},
          {"kind", "nufft-sweep"},
          {"backend", to_string(c.backend)},
          {"lut_resolution", 4096},
          {"error_sample", fmt::format("{} outputs per coil against the exact NUDFT in double", kSample)},
          {"timing", "one operator application (set_points excluded, reported apart), median of the frames"},
          {"rows", rows},
          {"fastest", best}};
}

}  // namespace radstream::app
