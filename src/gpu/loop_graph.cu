#include <utility>

#include "core/error.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/loop_graph.hpp"

namespace radstream::gpu {

LoopGraphBuilder::LoopGraphBuilder(StreamRef stream) : stream_(stream) {
  CUDA_CHECK(cudaGraphCreate(&graph_, 0));
}

LoopGraphBuilder::~LoopGraphBuilder() {
  if (graph_ && owned_) cudaGraphDestroy(graph_);
}

LoopHandle LoopGraphBuilder::new_loop() {
  cudaGraphConditionalHandle h = 0;
  // 0 at every launch (cudaGraphCondAssignDefault) until a kernel sets it.
  CUDA_CHECK(cudaGraphConditionalHandleCreate(&h, graph_, 0, cudaGraphCondAssignDefault));
  return static_cast<LoopHandle>(h);
}

std::vector<cudaGraphNode_t> LoopGraphBuilder::capture_into(cudaGraph_t graph,
                                                            const std::vector<cudaGraphNode_t>& deps,
                                                            const std::function<void()>& enqueue) {
  CUDA_CHECK(cudaStreamBeginCaptureToGraph(stream_, graph, deps.data(), nullptr, deps.size(),
                                           cudaStreamCaptureModeThreadLocal));
  std::vector<cudaGraphNode_t> last;
  try {
    enqueue();
    cudaStreamCaptureStatus status{};
    const cudaGraphNode_t* d = nullptr;
    std::size_t n = 0;
    CUDA_CHECK(cudaStreamGetCaptureInfo(stream_, &status, nullptr, nullptr, &d, nullptr, &n));
    last.assign(d, d + n);
  } catch (...) {
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(stream_, &g);  // the graph is ours (captured into): not destroyed here
    cudaGetLastError();
    throw;
  }
  cudaGraph_t g = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream_, &g));
  return last;
}

void LoopGraphBuilder::add(const std::function<void()>& enqueue) {
  if (!graph_) throw ConfigError("LoopGraphBuilder: add() after finish()");
  leaves_ = capture_into(graph_, leaves_, enqueue);
}

namespace {
// A conditional node of `type` after `deps`; its body graph in *body.
cudaGraphNode_t add_conditional(cudaGraph_t graph, const std::vector<cudaGraphNode_t>& deps,
                                LoopHandle handle, cudaGraphConditionalNodeType type, cudaGraph_t* body) {
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = static_cast<cudaGraphConditionalHandle>(handle);
  params.conditional.type = type;
  params.conditional.size = 1;
  cudaGraphNode_t node = nullptr;
  CUDA_CHECK(cudaGraphAddNode(&node, graph, deps.data(), nullptr, deps.size(), &params));
  *body = params.conditional.phGraph_out[0];
  return node;
}
}  // namespace

void LoopGraphBuilder::add_loop(LoopHandle handle, const std::function<void()>& body) {
  if (!graph_) throw ConfigError("LoopGraphBuilder: add_loop() after finish()");
  cudaGraph_t g = nullptr;
  cudaGraphNode_t node = add_conditional(graph_, leaves_, handle, cudaGraphCondTypeWhile, &g);
  capture_into(g, {}, body);
  leaves_.assign(1, node);
}

void LoopGraphBuilder::add_if(LoopHandle handle, const std::function<void(LoopGraphBuilder&)>& build) {
  if (!graph_) throw ConfigError("LoopGraphBuilder: add_if() after finish()");
  cudaGraph_t g = nullptr;
  cudaGraphNode_t node = add_conditional(graph_, leaves_, handle, cudaGraphCondTypeIf, &g);
  LoopGraphBuilder inner(stream_, g);
  build(inner);
  leaves_.assign(1, node);
}

Graph LoopGraphBuilder::finish() {
  if (!graph_ || !owned_) throw ConfigError("LoopGraphBuilder: finish() twice, or of a branch");
  Graph g = Graph::instantiate(graph_);
  cudaGraphDestroy(std::exchange(graph_, nullptr));
  return g;
}

}  // namespace radstream::gpu
