// The NCCL reduce group (reducer.hpp): one communicator per GPU of this process, made once by
// ncclCommInitAll; allreduce_sum is one in-place ncclAllReduce (float sums of the interleaved complex
// values) on the partition's stream. libnccl.so.2 is opened at run time: nccl.h gives the types, dlsym the
// entry points, so that neither the build nor a machine without NCCL needs it for anything else.
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "gpu/cuda_check.cuh"
#include "linalg/reducer.hpp"

namespace radstream {
namespace {

struct NcclApi {
  void* lib = nullptr;
  std::string why;
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommGetAsyncError) async_error = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
};

// Opened once per process (a function-local static: no mutable global state beyond the loader's own).
const NcclApi& nccl_api() {
  static const NcclApi api = [] {
    NcclApi a;
    a.lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!a.lib) {
      const char* e = dlerror();
      a.why = std::string("cannot load libnccl.so.2: ") + (e ? e : "unknown reason");
      return a;
    }
    auto sym = [&](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(a.lib, name));
      if (!f && a.why.empty()) a.why = std::string("libnccl.so.2 lacks ") + name;
    };
    sym(a.comm_init_all, "ncclCommInitAll");
    sym(a.all_reduce, "ncclAllReduce");
    sym(a.comm_abort, "ncclCommAbort");
    sym(a.comm_destroy, "ncclCommDestroy");
    sym(a.async_error, "ncclCommGetAsyncError");
    sym(a.error_string, "ncclGetErrorString");
    return a;
  }();
  return api;
}

void check_nccl(ncclResult_t r, const char* call, const char* file, int line) {
  if (r != ncclSuccess) throw CudaError(call, nccl_api().error_string(r), file, line);
}
#define NCCL_CHECK(call) check_nccl((call), #call, __FILE__, __LINE__)

class NcclGroup;

class NcclReducer final : public Reducer {
 public:
  NcclReducer(NcclGroup& g, int rank, int device, gpu::StreamRef s, ncclComm_t c)
      : g_(g), rank_(rank), device_(device), stream_(s), comm_(c) {}
  int rank() const override { return rank_; }
  int size() const override;
  void allreduce_sum(cfloat* d_data, std::size_t n) override;
  void allreduce_sum(std::complex<double>* d_data, std::size_t n) override;
  void wait(double timeout_s) override;

 private:
  NcclGroup& g_;
  int rank_, device_;
  gpu::StreamRef stream_;
  ncclComm_t comm_;
};

class NcclGroup final : public ReduceGroup {
 public:
  NcclGroup(const std::vector<int>& devices, const std::vector<gpu::StreamRef>& streams) {
    const NcclApi& api = nccl_api();
    if (!api.why.empty()) throw ConfigError("coil split over NCCL: " + api.why);
    if (devices.empty() || devices.size() != streams.size())
      throw ConfigError("coil split over NCCL: " + std::to_string(devices.size()) + " devices and " +
                        std::to_string(streams.size()) + " streams");
    comms_.resize(devices.size());
    NCCL_CHECK(api.comm_init_all(comms_.data(), int(devices.size()), devices.data()));
    for (std::size_t r = 0; r < devices.size(); ++r)
      parts_.push_back(std::make_unique<NcclReducer>(*this, int(r), devices[r], streams[r], comms_[r]));
  }
  ~NcclGroup() override {
    const NcclApi& api = nccl_api();
    for (ncclComm_t c : comms_) {
      if (!c) continue;
      if (aborted())
        api.comm_abort(c);
      else
        api.comm_destroy(c);
    }
  }
  int size() const override { return int(parts_.size()); }
  Reducer& part(int rank) override { return *parts_.at(std::size_t(rank)); }
  std::string kind() const override { return "nccl"; }
  void abort(const std::string& why) override {
    std::lock_guard lock(m_);
    if (!why_.empty()) return;
    why_ = why.empty() ? "aborted" : why;
    for (ncclComm_t& c :
         comms_) {  // wakes kernels stuck waiting for a peer; the communicators are gone after
      if (c) nccl_api().comm_abort(c);
      c = nullptr;
    }
  }
  bool aborted() {
    std::lock_guard lock(m_);
    return !why_.empty();
  }
  std::string why() {
    std::lock_guard lock(m_);
    return why_;
  }

 private:
  std::vector<ncclComm_t> comms_;
  std::vector<std::unique_ptr<NcclReducer>> parts_;
  std::mutex m_;  // guards why_ and the communicators' abort
  std::string why_;
};

int NcclReducer::size() const {
  return g_.size();
}

void NcclReducer::allreduce_sum(cfloat* d_data, std::size_t n) {
  if (g_.aborted()) throw Error("coil split: " + g_.why());
  NCCL_CHECK(nccl_api().all_reduce(d_data, d_data, 2 * n, ncclFloat, ncclSum, comm_, stream_));
}

void NcclReducer::allreduce_sum(std::complex<double>* d_data, std::size_t n) {
  if (g_.aborted()) throw Error("coil split: " + g_.why());
  NCCL_CHECK(nccl_api().all_reduce(d_data, d_data, 2 * n, ncclDouble, ncclSum, comm_, stream_));
}

void NcclReducer::wait(double timeout_s) {
  gpu::DeviceGuard guard(device_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const cudaError_t q = cudaStreamQuery(stream_);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) CUDA_CHECK(q);
    ncclResult_t async = ncclSuccess;
    if (!g_.aborted()) NCCL_CHECK(nccl_api().async_error(comm_, &async));
    if (async != ncclSuccess && async != ncclInProgress) {
      g_.abort(std::string("NCCL error on GPU ") + std::to_string(device_) + ": " +
               nccl_api().error_string(async));
      throw Error("coil split: " + g_.why());
    }
    if (g_.aborted()) throw Error("coil split: " + g_.why());
    if (std::chrono::steady_clock::now() > deadline) {
      g_.abort("GPU " + std::to_string(device_) + " did not finish its reductions within " +
               std::to_string(timeout_s) + " s (stalled communicator aborted)");
      throw Error("coil split: " + g_.why());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace

bool nccl_available(std::string* why) {
  const NcclApi& api = nccl_api();
  if (why) *why = api.why;
  return api.why.empty();
}

std::unique_ptr<ReduceGroup> make_nccl_reduce_group(const std::vector<int>& devices,
                                                    const std::vector<gpu::StreamRef>& streams) {
  return std::make_unique<NcclGroup>(devices, streams);
}

}  // namespace radstream
