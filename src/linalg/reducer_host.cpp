// The host reduce group: partitions are threads of one process (reducer.hpp). A call is two meetings of all
// partitions: after the first every buffer is known, each partition sums its slice of the range over the
// partitions in order 0..P-1 into the shared result; after the second each copies the result back. A
// meeting that waits longer than the timeout, or a group aborted by a failing partition, throws.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "core/error.hpp"
#include "linalg/reducer.hpp"

namespace radstream {
namespace {

class HostGroup;

class HostReducer final : public Reducer {
 public:
  HostReducer(HostGroup& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override;
  void allreduce_sum(cfloat* data, std::size_t n) override;
  void allreduce_sum(std::complex<double>* data, std::size_t n) override;
  void wait(double) override {}

 private:
  HostGroup& g_;
  int rank_;
};

class HostGroup final : public ReduceGroup {
 public:
  HostGroup(int parts, std::size_t capacity, double timeout_s)
      : parts_(parts),
        timeout_(timeout_s),
        sum_(Extents{capacity}),
        sumd_(Extents{capacity}),
        ptrs_(std::size_t(parts), nullptr) {
    if (parts < 1) throw ConfigError("reduce group: " + std::to_string(parts) + " partitions (need >= 1)");
    if (!(timeout_s > 0))
      throw ConfigError("reduce group: timeout " + std::to_string(timeout_s) + " s must be > 0");
    for (int r = 0; r < parts; ++r) reducers_.push_back(std::make_unique<HostReducer>(*this, r));
  }
  int size() const override { return parts_; }
  Reducer& part(int rank) override { return *reducers_.at(std::size_t(rank)); }
  std::string kind() const override { return "host"; }
  void abort(const std::string& why) override {
    {
      std::lock_guard lock(m_);
      if (aborted_.empty()) aborted_ = why.empty() ? "aborted" : why;
    }
    cv_.notify_all();
  }

  void allreduce(int rank, cfloat* data, std::size_t n) { reduce(rank, data, n, sum_.data()); }
  void allreduce(int rank, std::complex<double>* data, std::size_t n) { reduce(rank, data, n, sumd_.data()); }

 private:
  template <class T>
  void reduce(int rank, T* data, std::size_t n, T* s) {
    if (n > sum_.size())
      throw ConfigError("reduce group: " + std::to_string(n) + " values exceed its capacity " +
                        std::to_string(sum_.size()));
    ptrs_[std::size_t(rank)] = data;
    meet();
    const std::size_t lo = n * std::size_t(rank) / std::size_t(parts_);
    const std::size_t hi = n * std::size_t(rank + 1) / std::size_t(parts_);
    for (std::size_t i = lo; i < hi; ++i) s[i] = static_cast<const T*>(ptrs_[0])[i];
    for (int p = 1; p < parts_; ++p) {
      const T* v = static_cast<const T*>(ptrs_[std::size_t(p)]);
      for (std::size_t i = lo; i < hi; ++i) s[i] += v[i];
    }
    meet();
    std::memcpy(static_cast<void*>(data), s, n * sizeof(T));
    meet();  // nobody starts the next call (and overwrites the sum) before everyone has copied it
  }

  // All partitions meet here (a barrier with a generation count), or it throws.
  void meet() {
    std::unique_lock lock(m_);
    if (!aborted_.empty()) throw Error("coil split: " + aborted_);
    const std::uint64_t gen = generation_;
    if (++arrived_ == parts_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    const bool met = cv_.wait_for(lock, std::chrono::duration<double>(timeout_),
                                  [&] { return generation_ != gen || !aborted_.empty(); });
    if (generation_ != gen) return;
    if (!met && aborted_.empty())
      aborted_ =
          "a partition did not reach the reduction within " + std::to_string(timeout_) + " s (stalled)";
    cv_.notify_all();
    throw Error("coil split: " + aborted_);
  }

  int parts_;
  double timeout_;
  HostBuffer<cfloat> sum_;
  HostBuffer<std::complex<double>> sumd_;
  std::vector<void*> ptrs_;
  std::vector<std::unique_ptr<HostReducer>> reducers_;
  std::mutex m_;  // guards arrived_, generation_, aborted_
  std::condition_variable cv_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  std::string aborted_;
};

int HostReducer::size() const {
  return g_.size();
}
void HostReducer::allreduce_sum(cfloat* data, std::size_t n) {
  g_.allreduce(rank_, data, n);
}
void HostReducer::allreduce_sum(std::complex<double>* data, std::size_t n) {
  g_.allreduce(rank_, data, n);
}

}  // namespace

std::unique_ptr<ReduceGroup> make_host_reduce_group(int parts, std::size_t capacity, double timeout_s) {
  return std::make_unique<HostGroup>(parts, capacity, timeout_s);
}

}  // namespace radstream
