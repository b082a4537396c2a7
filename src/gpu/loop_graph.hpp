// A CUDA graph with loops that run on the device: straight-line work, while loops and branches, captured from
// what a callback enqueues on one stream, replayed as one graph launch. A loop is a conditional while node
// (CUDA 12.4 and later): its body runs again while its condition is non-zero, and a kernel sets the condition
// (set_loop_condition, gpu/loop_condition.cuh) from values it reads on the device, so an iterative solve
// that stops on its residual runs without the host looking at the residual between iterations. The
// condition is 0 at every launch until a kernel sets it: the work added before a loop sets whether it runs
// once.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "gpu/handles.hpp"

struct CUgraph_st;
struct CUgraphNode_st;

namespace radstream::gpu {

// What a kernel is given to set a loop's condition (cudaGraphConditionalHandle).
using LoopHandle = std::uint64_t;

class LoopGraphBuilder {
 public:
  explicit LoopGraphBuilder(StreamRef stream);
  ~LoopGraphBuilder();
  LoopGraphBuilder(const LoopGraphBuilder&) = delete;
  LoopGraphBuilder& operator=(const LoopGraphBuilder&) = delete;
  // A new loop's handle, for the kernels of the work before it and of its body to set.
  LoopHandle new_loop();
  // Work enqueued by `enqueue` on the stream, after everything added so far.
  void add(const std::function<void()>& enqueue);
  // The loop `handle` (from new_loop()) after everything added so far: `body` enqueues one pass; its last
  // kernel sets the condition for the next.
  void add_loop(LoopHandle handle, const std::function<void()>& body);
  // A branch after everything added so far, taken when `handle` (from new_loop(), set by a kernel added
  // before) is non-zero: `build` adds its pieces (work, loops, branches) to the builder it is given.
  void add_if(LoopHandle handle, const std::function<void(LoopGraphBuilder&)>& build);
  // The instantiated graph (the builder is spent).
  Graph finish();

 private:
  // A builder of a branch's body (owned by its conditional node).
  LoopGraphBuilder(StreamRef stream, CUgraph_st* body) : stream_(stream), graph_(body), owned_(false) {}
  StreamRef stream_;
  CUgraph_st* graph_ = nullptr;
  bool owned_ = true;
  std::vector<CUgraphNode_st*> leaves_;  // the nodes the next piece depends on
  // Captures what `enqueue` enqueues into `graph` after `deps`; returns the capture's last nodes.
  std::vector<CUgraphNode_st*> capture_into(CUgraph_st* graph, const std::vector<CUgraphNode_st*>& deps,
                                            const std::function<void()>& enqueue);
};

}  // namespace radstream::gpu
