// The coil split on the host: partitions are threads, reduced by the host reduce group (CI's twin of the
// NCCL split).
#include <cstring>
#include <thread>

#include "linalg/vector_ops.hpp"
#include "noncart/coil_split_parts.hpp"
#include "noncart/sense_operator_cpu.hpp"

namespace radstream {
namespace {

struct CpuPart {
  std::unique_ptr<SenseOperatorCpu> op;
  std::unique_ptr<VectorOps> ops;
  std::unique_ptr<ConjugateGradient> cg;
  Reducer* reducer = nullptr;
  Vector b, x;
  HostBuffer<cfloat> maps, data;
  HostBuffer<std::complex<double>> sum;  // [pixels]: the partitions' sums in double
  bool solved = false;
  const float* traj = nullptr;
  std::complex<double>* sum_ptr() { return sum.data(); }
  const cfloat* data_ptr() const { return data.data(); }
  const float* traj_ptr() const { return traj; }
};

class CoilSplitSenseCpu final : public CoilSplitSense {
 public:
  CoilSplitSenseCpu(int N, int coils, std::size_t points, const NufftKernel& kernel,
                    const CoilSplitOptions& o, int parts, int threads)
      : N_(N), coils_(coils), points_(points), pixels_(std::size_t(N) * N), o_(o), traj_(Extents{points, 2}) {
    check_split(N, coils, points, parts);
    if (threads <= 0) threads = std::max(1, int(std::thread::hardware_concurrency()) / parts);
    group_ = make_host_reduce_group(parts, pixels_, o.timeout_s);
    threads_ = std::make_unique<PartThreads>(parts, *group_);
    for (int p = 0; p < parts; ++p) {
      const auto [c0, c1] = split_coils(coils, parts, p);
      auto part = std::make_unique<CpuPart>();
      part->op = std::make_unique<SenseOperatorCpu>(N, c1 - c0, points, kernel, o.toeplitz, threads);
      part->ops = make_vector_ops_cpu();
      part->cg = std::make_unique<ConjugateGradient>(pixels_, *part->ops);
      part->reducer = &group_->part(p);
      part->traj = traj_.data();
      part->b = Vector(pixels_, Location::Host);
      part->x = Vector(pixels_, Location::Host);
      part->maps = HostBuffer<cfloat>(Extents{std::size_t(c1 - c0), pixels_});
      part->sum = HostBuffer<std::complex<double>>(Extents{pixels_});
      part->data = HostBuffer<cfloat>(Extents{std::size_t(c1 - c0), points});
      parts_.push_back(std::move(part));
    }
  }

  void set_frame(const float* traj, const cfloat* data, const cfloat* maps,
                 std::uint64_t maps_version) override {
    std::memcpy(traj_.data(), traj, points_ * 2 * sizeof(float));
    const bool new_maps = maps_version == 0 || maps_version != maps_version_;
    maps_version_ = maps_version;
    if (new_maps) peak_ = coil_map_peak_power(maps, std::size_t(coils_), pixels_);
    for (int p = 0; p < parts(); ++p) {
      const auto [c0, c1] = coils_of(p);
      CpuPart& part = *parts_[std::size_t(p)];
      if (new_maps)
        std::memcpy(static_cast<void*>(part.maps.data()), maps + std::size_t(c0) * pixels_,
                    std::size_t(c1 - c0) * pixels_ * sizeof(cfloat));
      std::memcpy(static_cast<void*>(part.data.data()), data + std::size_t(c0) * points_,
                  std::size_t(c1 - c0) * points_ * sizeof(cfloat));
      part.op->set_maps(part.maps.data());
      if (!o_.psf_per_solve) part.op->set_points(traj_.data(), nullptr);  // else solve() makes the PSF
    }
    ready_ = true;
  }

  CgReport solve() override {
    if (!ready_) throw ConfigError("coil split: solve() before set_frame()");
    std::vector<CgReport> reports(parts_.size());
    threads_->run(
        [&](int p) { reports[std::size_t(p)] = solve_part(*parts_[std::size_t(p)], o_, peak_, pixels_); },
        o_.timeout_s);
    return reports[0];
  }

  void image(cfloat* out) override {
    std::memcpy(static_cast<void*>(out), parts_[0]->x.data(), pixels_ * sizeof(cfloat));
  }
  int parts() const override { return int(parts_.size()); }
  std::string reduce_kind() const override { return group_->kind(); }
  std::pair<int, int> coils_of(int p) const override { return split_coils(coils_, parts(), p); }

 private:
  int N_, coils_;
  std::size_t points_, pixels_;
  CoilSplitOptions o_;
  HostBuffer<float> traj_;
  double peak_ = 0;
  std::uint64_t maps_version_ = 0;  // of the maps the partitions hold (0: none or unversioned)
  bool ready_ = false;
  std::unique_ptr<ReduceGroup> group_;
  std::vector<std::unique_ptr<CpuPart>> parts_;
  std::unique_ptr<PartThreads> threads_;  // last: stopped first
};

}  // namespace

std::unique_ptr<CoilSplitSense> make_coil_split_sense_cpu(int matrix, int coils, std::size_t points,
                                                          const NufftKernel& kernel,
                                                          const CoilSplitOptions& o, int parts, int threads) {
  return std::make_unique<CoilSplitSenseCpu>(matrix, coils, points, kernel, o, parts, threads);
}

}  // namespace radstream
