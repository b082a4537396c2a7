// The coil split on GPUs: one partition per device, each with its own stream, SENSE operator, CG and share
// of the maps and data; the sums go over NCCL (linalg/reducer.hpp), enqueued on the partitions' streams, or
// through host memory where NCCL cannot serve (no libnccl.so.2; partitions sharing a GPU).
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "linalg/vector_ops.hpp"
#include "noncart/coil_split_parts.hpp"
#include "noncart/sense_operator_cuda.hpp"

namespace radstream {
namespace {

struct CudaPart {
  int device = 0;
  gpu::Stream stream;
  std::unique_ptr<SenseOperatorCuda> op;
  std::unique_ptr<VectorOps> ops;
  std::unique_ptr<ConjugateGradient> cg;
  Reducer* reducer = nullptr;
  Vector b, x;
  DeviceBuffer<cfloat> maps, data;
  DeviceBuffer<std::complex<double>> sum;  // [pixels]: the partitions' sums in double
  DeviceBuffer<float> traj;
  bool solved = false;
  std::complex<double>* sum_ptr() { return sum.data(); }
  const cfloat* data_ptr() const { return data.data(); }
  const float* traj_ptr() const { return traj.data(); }
};

class CoilSplitSenseCuda final : public CoilSplitSense {
 public:
  CoilSplitSenseCuda(int N, int coils, std::size_t points, const NufftKernel& kernel,
                     const CoilSplitOptions& o, const std::vector<int>& devices)
      : coils_(coils), points_(points), pixels_(std::size_t(N) * N), o_(o) {
    check_split(N, coils, points, int(devices.size()));
    const int parts = int(devices.size());
    std::vector<gpu::StreamRef> streams;
    for (int p = 0; p < parts; ++p) {
      const auto [c0, c1] = split_coils(coils, parts, p);
      gpu::DeviceGuard guard(devices[std::size_t(p)]);
      auto part = std::make_unique<CudaPart>();
      part->device = devices[std::size_t(p)];
      part->op =
          std::make_unique<SenseOperatorCuda>(N, c1 - c0, points, kernel, o.toeplitz, part->stream.get());
      part->op->set_deterministic(true);  // the same PSF and E^H y bits on every GPU and every run
      part->ops = make_vector_ops_cuda(part->stream.get());
      part->cg = std::make_unique<ConjugateGradient>(pixels_, *part->ops);
      part->b = Vector(pixels_, Location::Device);
      part->x = Vector(pixels_, Location::Device);
      part->maps = DeviceBuffer<cfloat>(Extents{std::size_t(c1 - c0), pixels_});
      part->sum = DeviceBuffer<std::complex<double>>(Extents{pixels_});
      part->data = DeviceBuffer<cfloat>(Extents{std::size_t(c1 - c0), points});
      part->traj = DeviceBuffer<float>(Extents{points, 2});
      streams.push_back(part->stream.get());
      parts_.push_back(std::move(part));
    }
    group_ = make_gpu_reduce_group(devices, streams, pixels_, o.timeout_s);
    for (int p = 0; p < parts; ++p) parts_[std::size_t(p)]->reducer = &group_->part(p);
    threads_ = std::make_unique<PartThreads>(parts, *group_);
  }

  ~CoilSplitSenseCuda() override {
    threads_.reset();
    for (auto& part : parts_) {  // each partition's memory and stream freed with its own device current
      gpu::DeviceGuard guard(part->device);
      part.reset();
    }
  }

  void set_frame(const float* traj, const cfloat* data, const cfloat* maps,
                 std::uint64_t maps_version) override {
    const bool new_maps = maps_version == 0 || maps_version != maps_version_;
    if (new_maps) peak_ = coil_map_peak_power(maps, std::size_t(coils_), pixels_);
    load(traj, data, maps, maps_version, gpu::copy_to_device, nullptr);
    for (auto& part : parts_) part->stream.synchronize();  // the host arrays may change after this call
  }

  void set_frame_device(const float* d_traj, const cfloat* d_data, const cfloat* d_maps, double peak_power,
                        gpu::StreamRef stream, std::uint64_t maps_version) override {
    peak_ = peak_power;
    if (!ready_event_) ready_event_ = std::make_unique<gpu::Event>();  // on the caller's GPU, made once
    ready_event_->record(stream);
    load(d_traj, d_data, d_maps, maps_version, gpu::copy_between_devices, ready_event_.get());
  }

  void image_device(cfloat* d_out) override {
    CudaPart& part = *parts_[0];
    gpu::DeviceGuard guard(part.device);
    gpu::copy_between_devices(d_out, part.x.data(), pixels_ * sizeof(cfloat), part.stream.get());
    part.stream.synchronize();
  }

  CgReport solve() override {
    if (!ready_) throw ConfigError("coil split: solve() before set_frame()");
    std::vector<CgReport> reports(parts_.size());
    threads_->run(
        [&](int p) {
          CudaPart& part = *parts_[std::size_t(p)];
          gpu::DeviceGuard guard(part.device);
          reports[std::size_t(p)] = solve_part(part, o_, peak_, pixels_);
        },
        o_.timeout_s);
    return reports[0];
  }

  void image(cfloat* out) override {
    CudaPart& part = *parts_[0];
    gpu::DeviceGuard guard(part.device);
    gpu::copy_to_host(out, part.x.data(), pixels_ * sizeof(cfloat), part.stream.get());
    part.stream.synchronize();
  }
  int parts() const override { return int(parts_.size()); }
  std::string reduce_kind() const override { return group_->kind(); }
  std::pair<int, int> coils_of(int p) const override { return split_coils(coils_, parts(), p); }

 private:
  // Each partition's share of the frame onto its GPU, on its stream (after `after`, when given); solve()
  // enqueues behind the copies. The maps only when their version says they changed (set_frame).
  using Copy = void (*)(void*, const void*, std::size_t, gpu::StreamRef);
  void load(const float* traj, const cfloat* data, const cfloat* maps, std::uint64_t maps_version, Copy copy,
            const gpu::Event* after) {
    const bool new_maps = maps_version == 0 || maps_version != maps_version_;
    maps_version_ = maps_version;
    for (int p = 0; p < parts(); ++p) {
      const auto [c0, c1] = coils_of(p);
      CudaPart& part = *parts_[std::size_t(p)];
      gpu::DeviceGuard guard(part.device);
      const gpu::StreamRef s = part.stream.get();
      if (after) after->wait_on(s);
      copy(part.traj.data(), traj, points_ * 2 * sizeof(float), s);
      if (new_maps)
        copy(part.maps.data(), maps + std::size_t(c0) * pixels_,
             std::size_t(c1 - c0) * pixels_ * sizeof(cfloat), s);
      copy(part.data.data(), data + std::size_t(c0) * points_,
           std::size_t(c1 - c0) * points_ * sizeof(cfloat), s);
      part.op->set_maps(part.maps.data());
      if (!o_.psf_per_solve) part.op->set_points(part.traj.data(), nullptr);  // else solve() makes the PSF
    }
    ready_ = true;
  }

  int coils_;
  std::size_t points_, pixels_;
  CoilSplitOptions o_;
  double peak_ = 0;
  std::uint64_t maps_version_ = 0;  // of the maps the partitions hold (0: none or unversioned)
  bool ready_ = false;
  std::vector<std::unique_ptr<CudaPart>> parts_;
  std::unique_ptr<ReduceGroup> group_;
  std::unique_ptr<PartThreads> threads_;     // after group_: stopped before it goes
  std::unique_ptr<gpu::Event> ready_event_;  // set_frame_device(): the caller's stream has the frame
};

}  // namespace

std::unique_ptr<CoilSplitSense> make_coil_split_sense_cuda(int matrix, int coils, std::size_t points,
                                                           const NufftKernel& kernel,
                                                           const CoilSplitOptions& o,
                                                           const std::vector<int>& devices) {
  return std::make_unique<CoilSplitSenseCuda>(matrix, coils, points, kernel, o, devices);
}

}  // namespace radstream
