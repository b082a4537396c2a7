// Live counters and latency statistics of a running pipeline, shared by its threads: counters are atomics,
// latency series are mutex-guarded fixed-size log histograms over the whole session (warm-up skipped;
// percentiles to within half a bin, 0.6 %, the maximum exact; no memory grows with the run's length). line()
// is the one-line status printed once a second; json() the report written at the end.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.hpp"
#include "core/spoke.hpp"
#include "stream/frame_gaps.hpp"
#include "stream/slowest_frames.hpp"
#include "wire/connection_counts.hpp"
#include "wire/wire.hpp"

namespace radstream {

// A sender's acquisition time is believed when it lies 0..60 s before `seen_ns` (its arrival); a sender on
// another host, a forged or a garbled timestamp is not (the frame counts under clock_invalid instead).
inline bool sender_clock_plausible(std::int64_t acquired_ns, std::int64_t seen_ns) {
  return acquired_ns > 0 && seen_ns >= acquired_ns && seen_ns - acquired_ns <= 60'000'000'000;
}

struct Percentiles {
  std::size_t count = 0;
  double p50 = 0, p95 = 0, p99 = 0, p999 = 0, max = 0;
};
nlohmann::ordered_json to_json(const Percentiles& p);
Percentiles percentiles_of(std::vector<double> v);  // of every value, exactly (sorted)  // {"count", "p50",
                                                    // "p95", "p99", "p99.9", "max"}

// A session series: 200 log-spaced bins a decade from 1e-3 to 1e6 ms, plus one below and one above. A
// percentile is the geometric centre of the bin that holds it, clamped to the exact minimum and maximum.
class LatencySeries {
 public:
  explicit LatencySeries(std::size_t skip = 10) : skip_(skip) {}
  void add(double ms);
  Percentiles summary() const;
  void merge(const LatencySeries& other);  // another series' values (a closed session's) into this one

  static constexpr int kBinsPerDecade = 200, kLowDecade = -3, kHighDecade = 6;
  static constexpr std::size_t kBins = std::size_t(kBinsPerDecade * (kHighDecade - kLowDecade)) + 2;

 private:
  mutable std::mutex m_;
  std::array<std::uint64_t, kBins> bins_{};
  std::size_t seen_ = 0, skip_, count_ = 0;
  double min_ = 0, max_ = 0;
};

// The same over the last `window_s` seconds only (what the status line and the viewer show: a switch to a
// slow method shows at once instead of being averaged into the whole session).
class RecentSeries {
 public:
  explicit RecentSeries(double window_s = 10.0) : window_ns_(std::int64_t(window_s * 1e9)) {}
  void add(double ms, std::int64_t now_ns);
  Percentiles summary(std::int64_t now_ns) const;
  double sum(std::int64_t now_ns) const;  // of the values in the window (a count series: skipped frames)

 private:
  std::int64_t window_ns_;
  mutable std::mutex m_;
  mutable std::deque<std::pair<std::int64_t, double>> v_;
  void prune(std::int64_t now_ns) const;
};

// One slice's own figures (a multi-slice stream: each slice has its worker, frames and latency).
struct SliceMetrics {
  std::atomic<std::uint64_t> frames{0}, frames_failed{0};
  LatencySeries arrival, end_to_end;
};

// A frame whose solve ran past its deadline: when the solve ended (monotonic_ns) and how long it took (ms).
struct DeadlineMiss {
  std::int64_t end_ns = 0;
  double solve_ms = 0;
  // The deadline's reserve the late frame ran with (Metrics::deadline_reserve_ms then).
  double reserve_ms = 0;
};

class Metrics {
 public:
  Metrics();
  // Slices of the stream (stream.slices; set once before the run starts) and each one's figures.
  int slice_count = 1;
  SliceMetrics& slice(int s) {
    return slices_[std::size_t(s < 0 ? 0 : s >= kMaxSlices ? kMaxSlices - 1 : s)];
  }
  const SliceMetrics& slice(int s) const {
    return slices_[std::size_t(s < 0 ? 0 : s >= kMaxSlices ? kMaxSlices - 1 : s)];
  }

  // Ingest.
  std::atomic<std::uint64_t> messages{0}, spokes{0}, bytes{0}, headers{0}, heartbeats{0}, texts{0}, closes{0};
  std::array<std::atomic<std::uint64_t>, wire::kRejectCount> rejected{};
  std::atomic<std::uint64_t> missing{0}, gaps{0}, streams{0}, reconfigurations{0};
  // Spokes that came before their stream header and were held for it (taken when it came, else no_header).
  std::atomic<std::uint64_t> held_before_header{0};
  // Acquisitions the conditioning took (stream/spoke_conditioner.hpp): noise scans (into the prewhitening),
  // and those set aside as no imaging spokes of the stream (navigators, calibration-only, dummy scans, ...).
  std::atomic<std::uint64_t> noise_spokes{0}, non_imaging{0};
  // Connections (the receive socket's guard, wire/connection_guard.hpp): peers that connected and that went
  // away (closed, or dropped by ZeroMQ, e.g. for an oversized message or a handshake not completed in time),
  // connections shut down at once over the connection limits; and CURVE handshakes refused (key not on the
  // allow-list, counted by the ZAP handler). The image publisher's connections apart.
  ConnectionCounts peers, publish_peers;
  std::atomic<std::uint64_t> auth_denied{0};
  std::atomic<std::int64_t> last_message_ns{0};
  std::atomic<bool> sender_lost{false};   // quiet past stream.sender_timeout_s without closing its stream
  std::atomic<bool> stream_ended{false};  // the sender closed its stream cleanly (until the next message)
  // Reconstruction.
  std::atomic<std::uint64_t> frames{0}, frames_skipped{0}, frames_failed{0};
  // A stack of stars: spokes (an in-plane step of one partition) a volume's window lacked, made zeros.
  std::atomic<std::uint64_t> volume_spokes_missing{0};
  // The followed stream's header says its spokes carry recorded acquisition times (a verbatim replay): its
  // frames are kept out of lag, end-to-end and glass latency, counted here instead.
  std::atomic<bool> recorded_clock{false};
  std::atomic<std::uint64_t> recorded_clock_frames{0};
  std::atomic<std::uint64_t> clock_invalid{
      0};  // frames whose sender time was not plausible (kept out of latency)
  // Sinks.
  std::atomic<std::uint64_t> recorded{0}, recorder_waits{0}, record_failures{0}, published{0},
      images_written{0}, sink_dropped{0},
      subscriptions{0},     // subscription messages taken in by the image publisher
      publisher_resets{0};  // times the publisher was made anew past its cap of distinct subscriptions
  // The frame's last spoke arrived -> its image handed to the ZeroMQ image publisher's socket, ms (the
  // ZeroMQ path's counterpart of mrd.arrival_to_sent).
  LatencySeries published_latency;
  LatencySeries published_after_ready;  // the image ready -> handed to the publisher's socket, ms

  // Gradient-delay correction (stream.gradient_delay): the delays in use and the RING estimates made.
  std::atomic<double> delay_x{0}, delay_y{0}, delay_xy{0};
  std::atomic<std::uint64_t> delay_estimates{0}, delay_failures{0};
  // The MRD TCP server (ingest/mrd/mrd_server.hpp), when --mrd-listen is set.
  struct Mrd {
    std::atomic<bool> on{false};
    // sessions: connections accepted; admitted: their header came and a place was free; each admitted one
    // ends completed (its close) or failed; refused: an unknown config or a stream over the limits (busy
    // and address refusals apart).
    std::atomic<std::uint64_t> sessions_admitted{0}, sessions_completed{0}, sessions_refused{0};
    // messages: every message the codec read whole (any id), before the session acted on it.
    std::atomic<std::uint64_t> sessions{0}, busy_refused{0}, address_refused{0}, sessions_failed{0},
        messages{0}, acquisitions{0}, non_imaging{0}, noise{0}, waveforms{0}, client_images{0}, ndarrays{0},
        texts{0}, queries{0}, images_sent{0}, images_dropped{0};
    std::array<std::atomic<std::uint64_t>, 7> faults{};  // by mrd::Fault
    LatencySeries arrival_to_sent;  // the frame's last spoke arrived -> its image message sent, ms
    LatencySeries
        ready_to_sent;  // the image ready -> sent (encoding, queue, socket): the MRD path's own cost
    // One summary per session that ended, at most kMaxSessionSummaries (the newest kept), in one ring
    // allocated with the first: a server that runs for months keeps its memory flat.
    struct SessionSummary {
      std::uint32_t session = 0;
      std::array<char, 64> client{}, config{};
      std::array<char, 160> settings{}, ended{};
      std::uint64_t acquisitions = 0, spokes = 0, frames_due = 0, frames_made = 0, frames_sent = 0,
                    rejected = 0;
      double arrival_to_ready_p50_ms = 0, arrival_to_ready_p99_ms = 0;
      static void put(std::array<char, 64>& to, const std::string& s) { put_text(to.data(), to.size(), s); }
      static void put(std::array<char, 160>& to, const std::string& s) { put_text(to.data(), to.size(), s); }
      static void put_text(char* to, std::size_t n, const std::string& s);
    };
    static constexpr std::size_t kMaxSessionSummaries = 1000;
    void add_session(const SessionSummary& summary);
    nlohmann::ordered_json session_summaries() const;

   private:
    mutable std::mutex sessions_m_;
    std::vector<SessionSummary> sessions_;  // a ring of kMaxSessionSummaries once the first came
    std::size_t next_session_ = 0, summaries_ = 0;
  } mrd;
  // Latency series, ms: end_to_end = last spoke acquired -> image ready; arrival = last spoke arrived ->
  // image ready; plus one per reconstruction stage and "assemble".
  LatencySeries end_to_end, arrival;
  // Separately: the sender's lag (last spoke acquired -> arrived) for the session, and over the last 10 s the
  // pipeline's own latency (arrived -> image ready), the sender's lag, and the frames skipped for being
  // behind.
  LatencySeries sender_lag;
  RecentSeries pipeline_recent, lag_recent, skipped_recent;
  // The viewer's acquired -> on glass latency (the last spoke's acquisition to the swap that first shows the
  // frame): the session's series and the last 10 s; the status line shows it when a viewer reports it.
  LatencySeries glass{5};
  RecentSeries glass_recent;
  // Images that came more than 100 ms after the previous one, with their causes (see frame_gaps.hpp).
  FrameGaps frame_gaps;
  // The ten frames with the longest arrival -> ready, with where their time went (see slowest_frames.hpp).
  SlowestFrames slowest_frames;
  const std::int64_t start_ns = monotonic_ns();
  void add_glass(double ms);
  // The session's latency series, and slice `slice`'s own.
  void add_frame_latency(std::int64_t acquired_ns, std::int64_t arrival_ns, std::int64_t ready_ns,
                         int slice = 0);
  void add_skipped(std::uint64_t n);
  void add_stage(const std::string& stage, double ms);
  // An iterative reconstruction's report per frame (cg-sense): iterations and final relative residual.
  LatencySeries solver_iterations{0}, solver_residual{0};
  std::atomic<int> last_iterations{-1};
  std::atomic<std::uint64_t> deadline_misses{0};  // frames whose solve ran past its deadline (cg or nlinv)
  std::atomic<std::uint64_t> deadline_stops{0};   // frames a deadline stopped early (best iterate delivered)
  std::atomic<double> last_residual{0};
  // The solver's deadline reserve learned from overruns: after the last frame, and the largest (one writer:
  // the reconstruction worker).
  std::atomic<double> deadline_reserve_ms{0}, deadline_reserve_max_ms{0};
  // The solve's own time per frame (ms), and by how much each late one ran past its deadline (ms): whether a
  // miss was a prediction a little short or a stall of the host.
  LatencySeries solver_ms{0}, deadline_overrun_ms{0};
  // deadline_ms > 0: a solve longer than it is a miss, counted with its overrun and kept in the miss log.
  void add_solver(int iterations, double residual, double ms = 0, double deadline_ms = 0);
  // The first kMissLog misses: when each solve ended (monotonic_ns) and how long it took.
  static constexpr std::size_t kMissLog = 256;
  std::vector<DeadlineMiss> deadline_miss_log() const;
  std::vector<std::pair<std::string, Percentiles>> stage_summaries() const;

  void reject(wire::Reject r) { ++rejected[int(r)]; }
  // A closed session's counts (its own Metrics) added into these, the run's totals: spokes, bytes, headers,
  // closes, rejections by reason, missing and gaps, frames made, skipped and failed (a session's recorder
  // counts into the run's metrics as it writes).
  void absorb(const Metrics& session);
  std::uint64_t rejected_total() const;

  std::string line(double elapsed_s);  // fps and spokes/s since the previous call
  nlohmann::ordered_json to_json(double elapsed_s) const;
  std::string json(double elapsed_s) const { return to_json(elapsed_s).dump(1) + "\n"; }

 private:
  mutable std::mutex m_;
  std::map<std::string, LatencySeries> stages_;
  std::vector<DeadlineMiss> miss_log_;
  std::array<SliceMetrics, kMaxSlices> slices_;
  std::uint64_t prev_frames_ = 0, prev_spokes_ = 0;
  double prev_t_ = 0;
};

}  // namespace radstream
