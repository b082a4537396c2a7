// The front door of one stream, whatever protocol it came by (DESIGN.md section 1): a protocol adapter (the
// ZeroMQ receiver, an MRD session) calls header(), spoke() and close() with messages it has decoded; here
// they are checked against the limits, sequenced, counted, recorded and written into the spoke rings (one per
// slice) that the reconstruction workers read. Bad input is counted by reason, logged once per reason, and
// skipped. Nothing here knows a socket.
#pragma once
#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stream/delay_corrector.hpp"
#include "stream/ingest_params.hpp"
#include "stream/metrics.hpp"
#include "stream/sequence_tracker.hpp"
#include "stream/spoke_conditioner.hpp"
#include "stream/spoke_source.hpp"
#include "wire/wire.hpp"

namespace radstream {

class Recorder;

class StreamIntake : public SpokeSource {
 public:
  // `max_window`: the largest frame window a worker may ask for (sizes the rings). `tag`: said in every log
  // line of this stream ("session 3"), empty for the one stream of a ZeroMQ receiver.
  StreamIntake(const IngestParams& p, Metrics& metrics, bool device_ring, int max_window,
               Recorder* recorder = nullptr, std::string tag = {});
  ~StreamIntake() override;
  StreamIntake(const StreamIntake&) = delete;
  StreamIntake& operator=(const StreamIntake&) = delete;

  // Every frame will be made: each new ring keeps all its spokes until the reconstruction says which it still
  // needs (call before the first header).
  void keep_spokes_for_every_frame() { keep_all_ = true; }
  void set_ring_gpus(std::vector<int> gpus) { ring_gpus_ = std::move(gpus); }
  void set_frame_stride(int stride) { delays_->set_stride(stride); }
  // Checked for every stream header before anything is allocated: "" when it fits, else why not.
  void set_memory_check(std::function<std::string(const StreamHeader&)> check) {
    memory_check_ = std::move(check);
  }
  // Replaces the recorder (null: off) between messages; a new one starts its file with the current header.
  void set_recorder(Recorder* r);

  // The stream's events, from one adapter thread. A header's `env` gives the stream id and sequence; a
  // spoke's `acq_header` is its 340-byte MRD AcquisitionHeader (recorded verbatim).
  void header(const wire::Message& m);
  // Noise and non-imaging acquisitions are conditioning's (stream/spoke_conditioner.hpp): the kind says
  // what the acquisition was.
  SpokeConditioner::Kind spoke(const wire::Message& m, std::span<const std::byte> acq_header);
  void close(const wire::Message& m);
  // Counts a bad message of kind `r`, logs the first of each kind (with `detail`).
  void reject(wire::Reject r, const std::string& detail);
  // At most 5 stream event lines per 10 s (a hostile sender cannot flood the log).
  bool event_line_allowed(std::int64_t now) { return events_.allow(now); }
  void say_events_left_out();  // at the end: how many event lines the budget kept out since the last one
  bool has_stream() const;     // a header has been taken (its rings exist)
  std::string last_rejection() const;  // why the last bad message was skipped ("" when none was)
  // Ends every wait (workers and a writer waiting for the reconstruction): the stream is over.
  void stop();
  std::uint64_t spokes_taken() const { return taken_; }  // this stream's spokes in its rings

  State state(int slice) const override;
  void wait_for(std::uint64_t generation, std::uint64_t count, std::chrono::milliseconds timeout,
                int slice) const override;
  int slices() const override { return p_.slices; }

 private:
  // `continues`: the header repeats that of the stream in hand (same id, not closed or restarted).
  void take_header(const wire::Message& m, bool continues);
  bool fits(const StreamHeader& h);
  NoisePrewhitener::MakeCovariance covariance_maker() const;
  void take_spoke(const wire::Message& m,
                  std::span<const std::byte> acq_header);  // an imaging spoke  // the limits, the ring size
                                                           // and the memory budget, before allocation
  // A ring's slots: the largest window (in spokes of every partition of a stack of stars) and the margin.
  int ring_slots(const StreamHeader& h) const { return max_window_ * h.partitions + p_.ring_margin; }
  std::string prefix() const { return tag_.empty() ? std::string() : tag_ + ": "; }

  IngestParams p_;
  Metrics& metrics_;
  std::unique_ptr<DelayCorrector> delays_;
  SpokeConditioner conditioner_;  // the adapter's thread's
  bool noise_budget_told_ = false;
  bool device_ring_;
  bool keep_all_ = false;
  int max_window_;
  std::string tag_;
  std::function<std::string(const StreamHeader&)> memory_check_;
  Recorder* recorder_;
  std::mutex rec_m_;  // guards recorder_ against set_recorder
  std::atomic<bool> stopped_{false};
  std::atomic<std::uint64_t> taken_{0};

  mutable std::mutex m_;
  mutable std::condition_variable cv_;
  State state_;                                    // the header and generation (ring: unused)
  std::vector<std::shared_ptr<SpokeRing>> rings_;  // one per slice, made with each new stream header
  std::vector<int> ring_gpus_;
  std::string xml_;
  SequenceTracker seq_;
  // The counters when the current stream (by id) began, so that its close reports its own spokes.
  std::uint32_t counted_stream_ = 0;
  std::uint64_t stream_spokes0_ = 0, stream_missing0_ = 0;
  std::array<bool, wire::kRejectCount> logged_{};
  std::string last_rejection_;  // under m_
  struct EventBudget {
    std::int64_t window_start = 0;
    int used = 0;
    long left_out = 0;
    bool allow(std::int64_t now);
  } events_;
};

}  // namespace radstream
