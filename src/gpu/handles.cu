#include <utility>

#include "gpu/cuda_check.cuh"
#include "gpu/handles.hpp"

namespace radstream::gpu {

Stream::Stream() {
  CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
}
Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}
Stream::Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (s_) cudaStreamDestroy(s_);
    s_ = std::exchange(o.s_, nullptr);
  }
  return *this;
}
void Stream::synchronize() const {
  CUDA_CHECK(cudaStreamSynchronize(s_));
}

Event::Event() {
  CUDA_CHECK(cudaEventCreate(&e_));
}
Event::~Event() {
  if (e_) cudaEventDestroy(e_);
}
Event::Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (e_) cudaEventDestroy(e_);
    e_ = std::exchange(o.e_, nullptr);
  }
  return *this;
}
void Event::record(StreamRef stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  // Inside a capture the record becomes an event node of the graph, so per-stage timing survives replay.
  if (status == cudaStreamCaptureStatusActive)
    CUDA_CHECK(cudaEventRecordWithFlags(e_, stream, cudaEventRecordExternal));
  else
    CUDA_CHECK(cudaEventRecord(e_, stream));
}
void Event::synchronize() const {
  CUDA_CHECK(cudaEventSynchronize(e_));
}
void Event::wait_on(StreamRef stream) const {
  CUDA_CHECK(cudaStreamWaitEvent(stream, e_, 0));
}
float Event::ms_since(const Event& start) const {
  float ms = 0.f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
  return ms;
}

Graph::~Graph() {
  reset();
}
Graph::Graph(Graph&& o) noexcept : g_(std::exchange(o.g_, nullptr)) {}
Graph& Graph::operator=(Graph&& o) noexcept {
  if (this != &o) {
    reset();
    g_ = std::exchange(o.g_, nullptr);
  }
  return *this;
}
void Graph::reset() noexcept {
  if (g_) cudaGraphExecDestroy(g_);
  g_ = nullptr;
}
void Graph::begin_capture(StreamRef stream) {
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
}
void Graph::abort_capture(StreamRef stream) noexcept {
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
  cudaGetLastError();  // clear the error the failed capture left
}
Graph Graph::end_capture(StreamRef stream) {
  Graph g;
  g.end_capture_update(stream);  // nothing to update: instantiated
  return g;
}
void Graph::end_capture_update(StreamRef stream) {
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  if (g_) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(g_, graph, &info) == cudaSuccess) {
      cudaGraphDestroy(graph);
      return;
    }
    cudaGetLastError();  // the update was refused (another shape): instantiate anew
    reset();
  }
  const cudaError_t e = cudaGraphInstantiate(&g_, graph, 0);
  cudaGraphDestroy(graph);
  CUDA_CHECK(e);
}

Graph Graph::instantiate(cudaGraph_t graph) {
  Graph g;
  CUDA_CHECK(cudaGraphInstantiate(&g.g_, graph, 0));
  return g;
}
void Graph::launch(StreamRef stream) const {
  CUDA_CHECK(cudaGraphLaunch(g_, stream));
}

int current_device() {
  int d = -1;
  CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

DeviceGuard::DeviceGuard(int device) {
  CUDA_CHECK(cudaGetDevice(&previous_));
  if (device != previous_) CUDA_CHECK(cudaSetDevice(device));
}
DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

}  // namespace radstream::gpu
