// Shared by the streaming tests: a small CPU run configuration on a tcp port, waiting for a condition, and
// collecting the frames a pipeline produces.
#pragma once
#include <chrono>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ingest/protocols.hpp"
#include "stream/stream_runtime.hpp"
#include "wire/sender.hpp"

namespace radstream::streamtest {

using namespace std::chrono_literals;

// The tests' fixed ports are 26xxx/27xxx, each used by one test only: below Linux's ephemeral range
// (32768-60999), where another process's outgoing connection could hold the port a test binds while ctest
// runs tests in parallel.
// A message's parts as the ingest takes them.
inline std::vector<std::span<const std::byte>> spans(const wire::Parts& p) {
  std::vector<std::span<const std::byte>> s;
  for (const auto& v : p) s.emplace_back(v.data(), v.size());
  return s;
}

inline std::string tcp(int port) {
  return "tcp://127.0.0.1:" + std::to_string(port);
}

// Window 32, stride 16, CPU, FFTW estimate, one thread, no status lines.
inline RunConfig small_config(int port, bool skip_when_behind = true) {
  RunConfig c;
  c.stream.endpoint = tcp(port);
  c.frames.window = 32;
  c.frames.stride = 16;
  c.frames.max_window = 64;
  c.frames.skip_when_behind = skip_when_behind;
  c.sinks.report_interval_s = 0;
  c.recon.backend = BackendChoice::Cpu;
  c.recon.fft.planner = FftPlanner::Estimate;
  c.recon.threads = 1;
  return c;
}

template <class F>
bool eventually(F f, std::chrono::milliseconds timeout = 10s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return f();
}

struct Collector {
  std::mutex m;
  std::vector<FrameResult> frames;
  void attach(StreamRuntime& p) {
    p.on_frame([this](const FrameResult& f) {
      std::lock_guard lock(m);
      frames.push_back(f);
    });
  }
  std::vector<FrameResult> get() {
    std::lock_guard lock(m);
    return frames;
  }
};

// A started pipeline that collects its frames, and a PUSH sender connected to it.
struct Rig {
  Registry reg = default_registry();
  StreamRuntime p;
  Collector c;
  zmq::context_t ctx{1};
  Sender s;
  static SenderParams to(const std::string& endpoint) {
    SenderParams sp;
    sp.endpoint = endpoint;
    return sp;
  }
  Rig(const RunConfig& cfg, std::uint32_t stream_id)
      : p(cfg, reg, make_protocol_servers), s(ctx, to(cfg.stream.endpoint), stream_id) {
    c.attach(p);
    p.start();
  }
};

}  // namespace radstream::streamtest
