// Sums of one vector across the partitions of a split solve (the coil split): every partition
// holds its share of a sum (its coils' part of E^H E x), and allreduce_sum() leaves the whole sum in every
// partition's buffer, the same values everywhere, so that the partitions' CG iterates stay identical without
// any other exchange. One ReduceGroup is made once at start-up (NCCL communicators are costly); each
// partition's thread drives its own Reducer.
//  - host group: partitions are host threads of one process, vectors in host memory. The sum is formed in a
//    fixed order (partition 0, 1, ...), so it does not depend on timing. This is the twin CI tests.
//  - NCCL group (reducer_nccl.cu): partitions are GPUs of one host; one ncclAllReduce on the partition's
//    stream per call, nothing waited for on the host. NCCL is loaded at run time (libnccl.so.2), so a build
//    and a machine without it run everything else.
//  - staged group (reducer_staged.cpp): partitions are GPU streams, several may share a GPU; each call copies
//    the vector to page-locked host memory, sums it like the host group and copies it back. For a host
//    without NCCL, and for testing the GPU split on one GPU.
// Stalls: a partition that fails calls abort(); the others' pending or next allreduce then throws instead of
// waiting forever. Host waits time out (timeout_s) and abort the group. On the GPU, NCCL's launch in a
// single-process clique does not return until every partition has launched (measured on 2 x H200), so the
// watchdog is the solver's (coil_split_parts.hpp, PartThreads::run): past its timeout it aborts the group
// (ncclCommAbort) from the waiting thread; wait() polls the stream and NCCL's error state for what fails
// after the launch.
#pragma once
#include <complex>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "gpu/handles.hpp"

namespace radstream {

class Reducer {
 public:
  virtual ~Reducer() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // data[0..n) += the other partitions' data, in every partition (n <= the group's capacity). On the GPU
  // this is enqueued on the partition's stream.
  virtual void allreduce_sum(cfloat* data, std::size_t n) = 0;
  // The same in double (the coil split's sums: added in double, rounded to float once by the caller).
  virtual void allreduce_sum(std::complex<double>* data, std::size_t n) = 0;
  // Waits until everything enqueued on this partition's stream is done, at most timeout_s; throws (and aborts
  // the group) on a stall or a communicator error. A no-op on the host.
  virtual void wait(double timeout_s) = 0;
};

class ReduceGroup {
 public:
  virtual ~ReduceGroup() = default;
  virtual int size() const = 0;
  virtual Reducer& part(int rank) = 0;
  // Stops the group: every pending and later allreduce throws, naming `why`.
  virtual void abort(const std::string& why) = 0;
  virtual std::string kind() const = 0;
};

// parts host threads, vectors of at most `capacity` values; a wait longer than timeout_s aborts the group.
std::unique_ptr<ReduceGroup> make_host_reduce_group(int parts, std::size_t capacity, double timeout_s = 30.0);

// One partition per device (devices[i] with streams[i], made on that device). Throws ConfigError when NCCL
// cannot be loaded (with the reason) or a CUDA build is missing.
std::unique_ptr<ReduceGroup> make_nccl_reduce_group(const std::vector<int>& devices,
                                                    const std::vector<gpu::StreamRef>& streams);
// One partition per stream (streams[i] made on the GPU its partition's vectors live on; GPUs may repeat),
// the sums formed in host memory in a fixed order. Calls must come from a thread whose current GPU is the
// partition's. A wait longer than timeout_s for the other partitions aborts the group.
std::unique_ptr<ReduceGroup> make_staged_reduce_group(const std::vector<gpu::StreamRef>& streams,
                                                      std::size_t capacity, double timeout_s = 30.0);
// The coil split's choice: NCCL when the devices are distinct and libnccl.so.2 loads, else the staged group
// (logged, with the reason, when there are several partitions).
std::unique_ptr<ReduceGroup> make_gpu_reduce_group(const std::vector<int>& devices,
                                                   const std::vector<gpu::StreamRef>& streams,
                                                   std::size_t capacity, double timeout_s = 30.0);
// Whether libnccl.so.2 can be loaded here, and if not why (for logs and test skips).
bool nccl_available(std::string* why = nullptr);

}  // namespace radstream
