// The newest frame of each protocol session (an MRD client), for the viewer's session columns: set from the
// session's worker as each frame is made, removed when the session ends, so that a column never outlives its
// session and an ended session's image is never shown as if it were coming.
#pragma once
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stream/frame_result.hpp"

namespace radstream {

class SessionMailboxes {
 public:
  struct Entry {
    std::string session;  // its tag ("session 3")
    std::shared_ptr<const FrameResult> frame;
  };
  void put(std::shared_ptr<const FrameResult> f) {
    if (!f || f->session.empty()) return;
    std::lock_guard l(m_);
    for (auto& e : entries_)
      if (e.session == f->session) {
        e.frame = std::move(f);
        return;
      }
    entries_.push_back({f->session, std::move(f)});
  }
  void remove(const std::string& session) {
    std::lock_guard l(m_);
    std::erase_if(entries_, [&](const Entry& e) { return e.session == session; });
  }
  // In the order the sessions showed their first frame.
  std::vector<Entry> all() const {
    std::lock_guard l(m_);
    return entries_;
  }

 private:
  mutable std::mutex m_;
  std::vector<Entry> entries_;
};

}  // namespace radstream
