// How still the host holds while a live case runs (issue 29): a thread that sleeps to a due time every
// millisecond and records each wake-up more than 1 ms late. A deadline miss whose solve overlaps such a stall
// was the host's, not the solver's prediction: on a leased virtual machine, stalls of the whole machine (seen
// as much by another process) reach tens of milliseconds, which no deadline inside the process can absorb.
#pragma once
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "stream/metrics.hpp"

namespace radstream {

struct HostStall {
  std::int64_t due_ns = 0;   // when the probe was due to wake (monotonic_ns)
  std::int64_t late_ns = 0;  // how late it woke
};

class HostStallProbe {
 public:
  HostStallProbe();  // starts the thread
  ~HostStallProbe();
  HostStallProbe(const HostStallProbe&) = delete;
  HostStallProbe& operator=(const HostStallProbe&) = delete;
  void stop();  // joins; a fault of the thread is logged
  std::vector<HostStall> stalls() const;
  std::uint64_t wakeups() const;

 private:
  void run() noexcept;
  mutable std::mutex m_;
  std::vector<HostStall> stalls_;  // reserved up front: the thread does not allocate while it records
  std::uint64_t wakeups_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// How many of the misses (each the interval [end - solve, end]) overlap a stall ([due, due + late]).
int misses_in_stalls(const std::vector<DeadlineMiss>& misses, const std::vector<HostStall>& stalls);

}  // namespace radstream
