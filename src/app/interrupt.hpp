// Ctrl-C and SIGTERM without a global flag: the signals are blocked in the calling thread (and in every
// thread it starts later), and requested() polls for a pending one. Construct it first in a command, before
// starting threads. After the first, second_stops_at_once() makes a second Ctrl-C end the process at once
// (a clean stop can wait on a slow frame or a session's drain).
#pragma once
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

namespace radstream::app {

class InterruptWatch {
 public:
  InterruptWatch() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~InterruptWatch() {
    done_ = true;
    if (second_.joinable()) second_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  bool requested() {
    if (!hit_) {
      timespec zero{0, 0};
      if (sigtimedwait(&set_, nullptr, &zero) > 0) hit_ = true;
    }
    return hit_;
  }

  // From now on a further Ctrl-C (or SIGTERM) ends the process at once with exit code 130, saying so on
  // stderr: what the clean stop was still finishing is abandoned (a recording keeps what it flushed).
  void second_stops_at_once(const char* who) {
    if (second_.joinable()) return;
    second_ = std::thread([this, who] {
      while (!done_) {
        timespec tick{0, 100'000'000};
        if (sigtimedwait(&set_, nullptr, &tick) > 0) {
          std::fprintf(stderr, "%s: interrupted again: stopping at once (exit 130)\n", who);
          std::fflush(stderr);
          std::_Exit(130);
        }
      }
    });
  }

 private:
  sigset_t set_{}, old_{};
  bool hit_ = false;
  std::atomic<bool> done_{false};
  std::thread second_;
};

}  // namespace radstream::app
