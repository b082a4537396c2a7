// The staged reduce group (reducer.hpp): partitions are GPU streams (several may share one GPU), their
// vectors in device memory; each allreduce_sum copies the partition's vector to its own page-locked host
// buffer, waits for that copy, forms the sum with the host group (fixed order 0..P-1, the same bits as the
// host twin's sums), and enqueues the copy back on the partition's stream. The way when NCCL cannot be
// used: no libnccl.so.2, or partitions that share a GPU (NCCL refuses two ranks on one device).
#include <set>

#include "core/error.hpp"
#include "core/log.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/pinned_buffer.hpp"
#include "linalg/reducer.hpp"

namespace radstream {
namespace {

class StagedReducer final : public Reducer {
 public:
  StagedReducer(Reducer& host, gpu::StreamRef s, std::size_t capacity)
      : host_(host), stream_(s), staging_(Extents{capacity}) {}
  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  void allreduce_sum(cfloat* d_data, std::size_t n) override {
    stage(reinterpret_cast<cfloat*>(staging_.data()), d_data, n);
  }
  void allreduce_sum(std::complex<double>* d_data, std::size_t n) override {
    stage(staging_.data(), d_data, n);
  }
  void wait(double) override { gpu::synchronize(stream_); }

 private:
  template <class T>
  void stage(T* h, T* d_data, std::size_t n) {
    if (n > staging_.size())
      throw ConfigError("reduce group: " + std::to_string(n) + " values exceed its capacity " +
                        std::to_string(staging_.size()));
    // The previous call's upload from h was enqueued before this download, so h is free once this waits.
    gpu::copy_to_host(h, d_data, n * sizeof(T), stream_);
    gpu::synchronize(stream_);
    host_.allreduce_sum(h, n);
    gpu::copy_to_device(d_data, h, n * sizeof(T), stream_);
  }

  Reducer& host_;
  gpu::StreamRef stream_;
  PinnedHostBuffer<std::complex<double>> staging_;  // holds either type: complex<double> is the larger
};

class StagedGroup final : public ReduceGroup {
 public:
  StagedGroup(const std::vector<gpu::StreamRef>& streams, std::size_t capacity, double timeout_s)
      : host_(make_host_reduce_group(int(streams.size()), capacity, timeout_s)) {
    for (std::size_t r = 0; r < streams.size(); ++r)
      parts_.push_back(std::make_unique<StagedReducer>(host_->part(int(r)), streams[r], capacity));
  }
  int size() const override { return host_->size(); }
  Reducer& part(int rank) override { return *parts_.at(std::size_t(rank)); }
  void abort(const std::string& why) override { host_->abort(why); }
  std::string kind() const override { return "staged"; }

 private:
  std::unique_ptr<ReduceGroup> host_;
  std::vector<std::unique_ptr<StagedReducer>> parts_;
};

}  // namespace

std::unique_ptr<ReduceGroup> make_staged_reduce_group(const std::vector<gpu::StreamRef>& streams,
                                                      std::size_t capacity, double timeout_s) {
  if (streams.empty()) throw ConfigError("reduce group: no partitions");
  return std::make_unique<StagedGroup>(streams, capacity, timeout_s);
}

std::unique_ptr<ReduceGroup> make_gpu_reduce_group(const std::vector<int>& devices,
                                                   const std::vector<gpu::StreamRef>& streams,
                                                   std::size_t capacity, double timeout_s) {
  std::string why;
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size())
    why = "partitions share a GPU";
  else if (!nccl_available(&why))
    why = "NCCL: " + why;
  if (why.empty()) return make_nccl_reduce_group(devices, streams);
  if (devices.size() > 1)
    log::warn("coil split over {} partitions: sums through host memory ({}); slower than NCCL",
              devices.size(), why);
  return make_staged_reduce_group(streams, capacity, timeout_s);
}

}  // namespace radstream
