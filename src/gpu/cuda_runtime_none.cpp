// Built when the CUDA backend is not: no GPU, pinned memory is plain aligned memory.
#include <cstdlib>
#include <new>

#include "gpu/cuda_runtime.hpp"
#include "gpu/pinned_buffer.hpp"

namespace radstream::gpu {

Availability query() {
  Availability a;
  a.reason = "this build has no CUDA backend (configured with RADSTREAM_CUDA=OFF or without nvcc)";
  return a;
}

std::size_t free_memory(int) {
  return 0;
}

bool cuda_stages_built() {
  return false;
}

}  // namespace radstream::gpu

namespace radstream::detail {

void* pinned_alloc(std::size_t bytes) {
  return aligned_bytes(bytes);
}
void pinned_free(void* p) {
  std::free(p);
}

}  // namespace radstream::detail

#include "gpu/device_memory.hpp"
#include "gpu/loop_graph.hpp"

namespace radstream::gpu {
namespace {
[[noreturn]] void no_cuda(const char* call) {
  throw CudaError(call, "this build has no CUDA backend", __FILE__, __LINE__);
}
}  // namespace
void* device_alloc(std::size_t) {
  no_cuda("device_alloc");
}
void device_free(void*) noexcept {}
void copy_to_device(void*, const void*, std::size_t, StreamRef) {
  no_cuda("copy_to_device");
}
void copy_to_host(void*, const void*, std::size_t, StreamRef) {
  no_cuda("copy_to_host");
}
void copy_device(void*, const void*, std::size_t, StreamRef) {
  no_cuda("copy_device");
}
void copy_between_devices(void*, const void*, std::size_t, StreamRef) {
  no_cuda("copy_between_devices");
}
void memset_device(void*, int, std::size_t, StreamRef) {
  no_cuda("memset_device");
}
void synchronize(StreamRef) {
  no_cuda("synchronize");
}
void copy_2d_to_device(void*, std::size_t, const void*, std::size_t, std::size_t, std::size_t, StreamRef) {
  no_cuda("copy_2d_to_device");
}
void copy_2d_device(void*, std::size_t, const void*, std::size_t, std::size_t, std::size_t, StreamRef) {
  no_cuda("copy_2d_device");
}
Stream::Stream() {
  no_cuda("Stream");
}
Stream::~Stream() = default;
Stream::Stream(Stream&& o) noexcept : s_(o.s_) {
  o.s_ = nullptr;
}
Stream& Stream::operator=(Stream&& o) noexcept {
  s_ = o.s_;
  o.s_ = nullptr;
  return *this;
}
void Stream::synchronize() const {
  no_cuda("Stream::synchronize");
}
Event::Event() {
  no_cuda("Event");
}
Event::~Event() = default;
Event::Event(Event&& o) noexcept : e_(o.e_) {
  o.e_ = nullptr;
}
Event& Event::operator=(Event&& o) noexcept {
  e_ = o.e_;
  o.e_ = nullptr;
  return *this;
}
void Event::record(StreamRef) {
  no_cuda("Event::record");
}
void Event::synchronize() const {
  no_cuda("Event::synchronize");
}
void Event::wait_on(StreamRef) const {
  no_cuda("Event::wait_on");
}
float Event::ms_since(const Event&) const {
  no_cuda("Event::ms_since");
}
Graph::~Graph() = default;
Graph::Graph(Graph&& o) noexcept : g_(o.g_) {
  o.g_ = nullptr;
}
Graph& Graph::operator=(Graph&& o) noexcept {
  g_ = o.g_;
  o.g_ = nullptr;
  return *this;
}
void Graph::reset() noexcept {
  g_ = nullptr;
}
void Graph::begin_capture(StreamRef) {
  no_cuda("Graph::begin_capture");
}
void Graph::abort_capture(StreamRef) noexcept {}
Graph Graph::end_capture(StreamRef) {
  no_cuda("Graph::end_capture");
}
void Graph::end_capture_update(StreamRef) {
  no_cuda("Graph::end_capture_update");
}
void Graph::launch(StreamRef) const {
  no_cuda("Graph::launch");
}
Graph Graph::instantiate(CUgraph_st*) {
  no_cuda("Graph::instantiate");
}
LoopGraphBuilder::LoopGraphBuilder(StreamRef stream) : stream_(stream) {
  no_cuda("LoopGraphBuilder");
}
LoopGraphBuilder::~LoopGraphBuilder() = default;
LoopHandle LoopGraphBuilder::new_loop() {
  no_cuda("LoopGraphBuilder::new_loop");
}
void LoopGraphBuilder::add(const std::function<void()>&) {
  no_cuda("LoopGraphBuilder::add");
}
void LoopGraphBuilder::add_loop(LoopHandle, const std::function<void()>&) {
  no_cuda("LoopGraphBuilder::add_loop");
}
void LoopGraphBuilder::add_if(LoopHandle, const std::function<void(LoopGraphBuilder&)>&) {
  no_cuda("LoopGraphBuilder::add_if");
}
Graph LoopGraphBuilder::finish() {
  no_cuda("LoopGraphBuilder::finish");
}
int current_device() {
  no_cuda("current_device");
}
DeviceGuard::DeviceGuard(int) {
  no_cuda("DeviceGuard");
}
DeviceGuard::~DeviceGuard() = default;
}  // namespace radstream::gpu
