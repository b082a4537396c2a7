// A line at least every `every` while a long step runs (FFTW planning, coil maps, a slow frame), so that no
// command is silent for seconds: "recon: still estimating coil maps (4 s)". The step is said with doing();
// detail(), when given, adds what the step can tell of its own progress (a Newton step, CG iterations). Its
// thread catches and reports whatever the detail throws.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace radstream {

class Heartbeat {
 public:
  explicit Heartbeat(std::string who, std::chrono::milliseconds every = std::chrono::milliseconds(1500));
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // A new step, said by the caller (its own line, if any, is the caller's): the beat's clock restarts.
  void doing(std::string what, std::function<std::string()> detail = {});
  // Nothing long in progress: no beats until the next doing().
  void idle();

 private:
  void loop();
  std::string who_;
  std::chrono::milliseconds every_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string what_;
  std::function<std::string()> detail_;
  std::chrono::steady_clock::time_point since_{}, last_line_{};
  std::thread thread_;
};

}  // namespace radstream
