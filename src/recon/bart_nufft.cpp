#include "recon/bart_nufft.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "linalg/vector_ops.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "recon/recon_params.hpp"
#if RADSTREAM_HAVE_CUDA
#include "noncart/nufft_operator_cuda.hpp"
#endif

namespace radstream {

std::vector<int> parse_nufft_dims(const std::string& s, const std::string& option) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ':')) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(part, &used);
      if (used != part.size()) throw std::invalid_argument(part);
      out.push_back(v);
    } catch (const std::exception&) {
      throw ConfigError(fmt::format("{} '{}': '{}' is not a whole number", option, s, part));
    }
  }
  if (out.size() < 2 || out.size() > 3)
    throw ConfigError(fmt::format("{} '{}' must be N:N (2D) or N:N:N (3D)", option, s));
  return out;
}

std::vector<int> nufft_dims_of_reach(std::span<const cfloat> traj) {
  double reach[3] = {0, 0, 0};
  for (std::size_t j = 0; j + 2 < traj.size(); j += 3)
    for (int ax = 0; ax < 3; ++ax) reach[ax] = std::max(reach[ax], double(std::abs(traj[j + ax].real())));
  std::vector<int> m;
  for (int ax = 0; ax < 3; ++ax) {
    const int n = 2 * int(std::ceil(std::min(reach[ax], 1e6) - 1e-3));
    if (ax < 2 || n > 0) m.push_back(std::max(n, 2));
  }
  return m;
}

struct BartNufftPlan::Engine {
  int batch = 0;
  std::unique_ptr<NufftOperatorCpu> cpu;
#if RADSTREAM_HAVE_CUDA
  std::unique_ptr<gpu::Stream> stream;  // made for the CUDA engine only (none on a machine without a GPU)
  DeviceBuffer<float> d_k;
  DeviceBuffer<cfloat> d_image, d_kspace;
  std::unique_ptr<NufftOperatorCuda> cuda;
  std::unique_ptr<VectorOps> ops;  // the BART scaling of a device caller's output, on `stream`
  std::unique_ptr<gpu::Event> caller_ready, done;  // order a device caller's stream and `stream`
#endif
};

BartNufftPlan::BartNufftPlan(std::span<const cfloat> traj, std::vector<int> dims, const BartNufftOptions& o,
                             const std::string& what)
    : dims_(std::move(dims)), o_(o) {
  if (dims_.size() == 3 && dims_[2] == 1) dims_.pop_back();
  if (dims_.size() < 2 || dims_.size() > 3)
    throw ConfigError(fmt::format("dims {}: give 2 (X, Y) or 3 (X, Y, Z) extents", fmt::join(dims_, ":")));
  for (int v : dims_)
    if (v < 2 || v % 2 || v > 4096)
      throw ConfigError(
          fmt::format("dims {}: extent {} must be even and in 2..4096", fmt::join(dims_, ":"), v));
  if (o.width < 2 || o.width > 16) throw ConfigError(fmt::format("width {} must be in 2..16", o.width));
  if (!(o.oversampling >= 1.0 && o.oversampling <= 4.0))
    throw ConfigError(fmt::format("oversampling {} must be in 1..4", o.oversampling));
  if (traj.size() % 3 != 0 || traj.empty())
    throw InputError(
        fmt::format("{}: a trajectory has 3 coordinates per point ({} values given)", what, traj.size()));
  const int d = int(dims_.size());
  for (int ax = 0; ax < d; ++ax) matrix_[std::size_t(ax)] = dims_[std::size_t(ax)];
  points_ = traj.size() / 3;
  // BART units (+-N/2 per axis) -> cycles per pixel.
  k_.resize(points_ * std::size_t(d));
  for (std::size_t j = 0; j < points_; ++j)
    for (int ax = 0; ax < d; ++ax) {
      const float v = traj[3 * j + std::size_t(ax)].real();
      if (!std::isfinite(v) || std::abs(v) > 1e6f)
        throw InputError(fmt::format("{}: point {} has coordinate {} on axis {} (must be finite, |k| <= 1e6)",
                                     what, j, v, ax));
      k_[std::size_t(d) * j + std::size_t(ax)] = v / float(matrix_[std::size_t(ax)]);
    }
  // The 2D GPU operator takes square images only; auto keeps the others on the CPU.
  where_ = resolve_backend(o.backend);
  if (where_.backend == Backend::Cuda && d == 2 && matrix_[0] != matrix_[1]) {
    if (o.backend == BackendChoice::Cuda)
      throw ConfigError(fmt::format("backend cuda: the 2D GPU NUFFT takes a square image, not {}x{}",
                                    matrix_[0], matrix_[1]));
    where_ = {Backend::Cpu, fmt::format("the 2D GPU NUFFT takes square images; {}x{} runs on the CPU",
                                        matrix_[0], matrix_[1])};
  }
}

BartNufftPlan::~BartNufftPlan() = default;

BartNufftPlan::Engine& BartNufftPlan::engine(int batch) {
  if (batch < 1) throw ConfigError(fmt::format("a batch of {} arrays: give at least one", batch));
  if (engine_ && engine_->batch == batch) return *engine_;
  engine_.reset();  // one operator at a time: a new batch size replaces it
  auto e = std::make_unique<Engine>();
  e->batch = batch;
  const int d = int(dims_.size());
  const NufftKernel kernel{o_.width, o_.oversampling, o_.lut_resolution};
  if (where_.backend == Backend::Cuda) {
#if RADSTREAM_HAVE_CUDA
    device_ = gpu::current_device();
    e->stream = std::make_unique<gpu::Stream>();
    e->ops = make_vector_ops_cuda(e->stream->get());
    e->caller_ready = std::make_unique<gpu::Event>();
    e->done = std::make_unique<gpu::Event>();
    e->d_k = DeviceBuffer<float>(Extents{k_.size()});
    e->d_image = DeviceBuffer<cfloat>(Extents{image_size() * std::size_t(batch)});
    e->d_kspace = DeviceBuffer<cfloat>(Extents{points_ * std::size_t(batch)});
    gpu::copy_to_device(e->d_k.data(), k_.data(), k_.size() * sizeof(float), e->stream->get());
    e->cuda = std::make_unique<NufftOperatorCuda>(d, matrix_, batch, points_, kernel, e->stream->get());
    e->cuda->set_points(e->d_k.data());
#endif
  } else {
    e->cpu = std::make_unique<NufftOperatorCpu>(d, matrix_, batch, points_, kernel, FftPlanner::Estimate,
                                                o_.threads);
    e->cpu->set_points(k_.data());
  }
  engine_ = std::move(e);
  return *engine_;
}

void BartNufftPlan::forward(const cfloat* image, cfloat* kspace, int batch) {
  Engine& e = engine(batch);
  const std::size_t n_out = points_ * std::size_t(batch);
#if RADSTREAM_HAVE_CUDA
  if (e.cuda) {
    gpu::copy_to_device(e.d_image.data(), image, image_size() * std::size_t(batch) * sizeof(cfloat),
                        e.stream->get());
    e.cuda->forward(e.d_image.data(), e.d_kspace.data());
    gpu::copy_to_host(kspace, e.d_kspace.data(), n_out * sizeof(cfloat), e.stream->get());
    gpu::synchronize(e.stream->get());
  }
#endif
  if (e.cpu) e.cpu->forward(image, kspace);
  // The operator is unscaled (the exact NUDFT sums); BART scales both directions by 1/sqrt(prod N).
  const float scale = 1.f / std::sqrt(float(image_size()));
  std::for_each(kspace, kspace + n_out, [scale](cfloat& v) { v *= scale; });
}

void BartNufftPlan::forward_device(const cfloat* d_image, cfloat* d_kspace, int batch,
                                   gpu::StreamRef caller) {
  on_device(true, d_image, d_kspace, batch, caller);
}

void BartNufftPlan::adjoint_device(const cfloat* d_kspace, cfloat* d_image, int batch,
                                   gpu::StreamRef caller) {
  on_device(false, d_kspace, d_image, batch, caller);
}

void BartNufftPlan::on_device(bool forward, const cfloat* d_in, cfloat* d_out, int batch,
                              gpu::StreamRef caller) {
  if (where_.backend != Backend::Cuda)
    throw ConfigError(
        fmt::format("device arrays given to a NUFFT plan that runs on the CPU ({})", where_.reason));
#if RADSTREAM_HAVE_CUDA
  Engine& e = engine(batch);
  e.caller_ready->record(caller);  // what the caller enqueued before (its input's producer) comes first
  e.caller_ready->wait_on(e.stream->get());
  if (forward)
    e.cuda->forward(d_in, d_out);
  else
    e.cuda->adjoint(d_in, d_out);
  const std::size_t n = (forward ? points_ : image_size()) * std::size_t(batch);
  const float scale = 1.f / std::sqrt(float(image_size()));
  e.ops->axpy(d_out, scale - 1.f, d_out, n);  // d_out *= scale, as BART scales both directions
  e.done->record(e.stream->get());
  e.done->wait_on(caller);  // the caller's later work (its use of the output) waits for ours
#else
  (void)forward, (void)d_in, (void)d_out, (void)batch, (void)caller;  // no build without CUDA gets here
#endif
}

void BartNufftPlan::adjoint(const cfloat* kspace, cfloat* image, int batch) {
  Engine& e = engine(batch);
  const std::size_t n_out = image_size() * std::size_t(batch);
#if RADSTREAM_HAVE_CUDA
  if (e.cuda) {
    gpu::copy_to_device(e.d_kspace.data(), kspace, points_ * std::size_t(batch) * sizeof(cfloat),
                        e.stream->get());
    e.cuda->adjoint(e.d_kspace.data(), e.d_image.data());
    gpu::copy_to_host(image, e.d_image.data(), n_out * sizeof(cfloat), e.stream->get());
    gpu::synchronize(e.stream->get());
  }
#endif
  if (e.cpu) e.cpu->adjoint(kspace, image);
  const float scale = 1.f / std::sqrt(float(image_size()));
  std::for_each(image, image + n_out, [scale](cfloat& v) { v *= scale; });
}

std::vector<cfloat> adjoint_rss(std::span<const cfloat> traj, const std::vector<cfloat>& weighted, int coils,
                                std::vector<int> dims, const ReconParams& p, const std::string& what) {
  BartNufftOptions o;
  o.width = p.gridding.width;
  o.oversampling = p.gridding.oversampling;
  o.lut_resolution = p.gridding.lut_resolution;
  o.threads = p.threads;
  o.backend = p.backend;
  BartNufftPlan plan(traj, std::move(dims), o, what);
  std::vector<cfloat> each(plan.image_size() * std::size_t(coils));
  plan.adjoint(weighted.data(), each.data(), coils);
  std::vector<cfloat> image(plan.image_size());
  for (std::size_t i = 0; i < image.size(); ++i) {
    double sum = 0;
    for (int c = 0; c < coils; ++c) sum += std::norm(each[std::size_t(c) * image.size() + i]);
    image[i] = cfloat(float(std::sqrt(sum)), 0.f);
  }
  return image;
}

}  // namespace radstream
