// Ctrl-C and SIGTERM without a global flag: the signals are blocked in the calling thread (and in every
// thread it starts later), and requested() polls for a pending one. Construct it first in a command, before
// starting threads.
#pragma once
#include <csignal>

namespace radstream::app {

class InterruptWatch {
 public:
  InterruptWatch() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~InterruptWatch() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  bool requested() {
    if (!hit_) {
      timespec zero{0, 0};
      if (sigtimedwait(&set_, nullptr, &zero) > 0) hit_ = true;
    }
    return hit_;
  }

 private:
  sigset_t set_{}, old_{};
  bool hit_ = false;
};

}  // namespace radstream::app
