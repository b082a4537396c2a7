// The memory all of a server's streams may hold together: each stream (the ZeroMQ stream, every MRD session)
// holds what its header needs (recon/memory_budget.hpp) while it lives, and a header that would take the
// total past the limit is refused, naming what is held and what is left. Per stream, memory_budget's limit
// still applies; this bounds their sum, so that N clients with N headers each inside the per-stream limit
// cannot together take the host or the GPU.
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "recon/memory_budget.hpp"

namespace radstream {

class MemoryAccount : public std::enable_shared_from_this<MemoryAccount> {
 public:
  explicit MemoryAccount(MemoryLimit total) : total_(std::move(total)) {}

  // What one stream holds; given back when it is destroyed (or replaced by the stream's next header).
  class Hold {
   public:
    Hold() = default;
    ~Hold() { release(); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    void release();
    double host_bytes() const { return host_; }
    double device_bytes() const { return device_; }

   private:
    friend class MemoryAccount;
    std::weak_ptr<MemoryAccount> account_;
    double host_ = 0, device_ = 0;
  };

  // Takes `need` into `hold` (in place of what `hold` held: a stream's new header replaces its old one):
  // "" when it fits what the other streams leave, else why not (and `hold` keeps what it held).
  std::string reserve(Hold& hold, const MemoryNeed& need);
  double held_host() const;
  double held_device() const;
  const MemoryLimit& limit() const { return total_; }

 private:
  void give_back(double host, double device);
  MemoryLimit total_;
  mutable std::mutex m_;
  double host_ = 0, device_ = 0;
};

}  // namespace radstream
