// Typed RAII handles for CUDA streams, events, graphs and the current device, with no CUDA types in this
// header (the runtime's handle structs are only declared), so host code, tests and stages can own them.
// Every call is checked and throws CudaError naming the call; in a build without CUDA they throw.
#pragma once

struct CUstream_st;
struct CUevent_st;
struct CUgraphExec_st;
struct CUgraph_st;

namespace radstream::gpu {

// A stream as the kernels see it (cudaStream_t), not owning. nullptr is the legacy default stream, which the
// pipeline never uses for its work.
using StreamRef = CUstream_st*;

// An owned non-blocking stream on the current device.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  StreamRef get() const { return s_; }
  void synchronize() const;

 private:
  StreamRef s_ = nullptr;
};

// An owned event (timing enabled). record() inside a stream capture becomes an event node of the graph.
class Event {
 public:
  Event();
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(StreamRef stream);
  void synchronize() const;                  // the host waits for it
  void wait_on(StreamRef stream) const;      // later work on `stream` waits for it
  float ms_since(const Event& start) const;  // both recorded and complete

 private:
  CUevent_st* e_ = nullptr;
};

// An instantiated CUDA graph: what is enqueued on a stream between begin_capture() and end_capture() is
// recorded, not run; launch() replays it.
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(Graph&& o) noexcept;
  Graph& operator=(Graph&& o) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  static void begin_capture(StreamRef stream);
  static void abort_capture(StreamRef stream) noexcept;  // after a failure between begin and end
  static Graph end_capture(StreamRef stream);
  // Ends a capture begun on `stream` and makes it this graph: the instantiated graph updated in place when
  // the new capture has its shape and only kernel arguments changed (cudaGraphExecUpdate, a fraction of a
  // millisecond), else instantiated anew (many milliseconds for a solver's graph).
  void end_capture_update(StreamRef stream);
  // An instantiated copy of a graph built another way (gpu/loop_graph.hpp); the graph stays the caller's.
  static Graph instantiate(CUgraph_st* graph);
  void launch(StreamRef stream) const;
  bool empty() const { return g_ == nullptr; }
  void reset() noexcept;

 private:
  CUgraphExec_st* g_ = nullptr;
};

// The current device (cudaGetDevice).
int current_device();

// Makes `device` current for its lifetime and restores the previous device after (cuFINUFFT's
// DeviceSwitcher): one worker per GPU wraps its calls in one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace radstream::gpu
