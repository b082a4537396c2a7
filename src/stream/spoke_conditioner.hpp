// The conditioning every stream's acquisitions go through at its front door, whatever their protocol (as
// Gadgetron's gadgets on the acquisition path): noise acquisitions (flag IS_NOISE_MEASUREMENT) build the
// coils' noise covariance, and every later imaging spoke is prewhitened by it (stream/noise_prewhitener.hpp,
// with the bandwidth scaling); acquisitions that are not imaging spokes of the stream (calibration-only,
// navigators, phase correction, dummy scans, feedback, ...) are set aside; a partial echo is placed at its
// true k in the readout the stream declares (io/asymmetric_echo.hpp). A plain spoke passes untouched (no
// copy).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/buffer.hpp"
#include "stream/noise_prewhitener.hpp"
#include "wire/wire.hpp"

namespace radstream {

class SpokeConditioner {
 public:
  // What an acquisition was.
  enum class Kind {
    Imaging,          // a spoke of the stream (maybe placed and prewhitened)
    Noise,            // taken into the noise covariance
    NoiseOverBudget,  // a noise acquisition past the budget: left out
    NonImaging        // not an imaging spoke: set aside
  };
  // Noise samples (coil vectors) taken per stream: several times a scanner's noise scan, and small enough
  // that noise cannot keep a stream (and a server's place) busy.
  static constexpr std::size_t kMaxNoiseSamples = std::size_t(1) << 18;

  // A new stream: its readout (encodedSpace: partial echoes are placed into it), its coil count (noise of
  // another is refused: the pipeline's coil limit holds for noise too), its header text (the relative
  // receiver noise bandwidth, Gadgetron's 0.793 when absent), and where the noise covariance is summed (the
  // stream's GPU, or the CPU). Noise of the stream before is dropped.
  void new_stream(int samples_full, int coils, const std::string& xml,
                  NoisePrewhitener::MakeCovariance covariance = make_noise_covariance_cpu);
  // An imaging spoke may come back viewing this conditioner's buffers (`m`'s spans and `acq_header`: the
  // placed echo with its header's sample count, the prewhitened data), valid until the next call. Throws
  // InputError naming what is wrong (noise of another coil count, a spoke of another coil count than the
  // noise).
  Kind take(wire::Message& m, std::span<const std::byte>& acq_header);
  // Whether acquisition flags mark an imaging spoke of the stream (neither noise nor set aside).
  static bool imaging(std::uint64_t flags);
  // What the conditioning has just started to do (the prewhitening made, or why not; partial echoes placed),
  // once, for the log; empty when nothing new. `warning`: something the client should hear.
  struct Note {
    std::string text;
    bool warning = false;
  };
  Note take_note() { return std::exchange(note_, {}); }
  std::uint64_t partial_echoes() const { return partial_echoes_; }
  bool prewhitening() const { return noise_.ready(); }

 private:
  int samples_full_ = 0;
  int coils_ = 0;
  double bandwidth_ = 0.793;
  NoisePrewhitener noise_;
  bool noise_failed_ = false;
  Note note_;
  std::uint64_t partial_echoes_ = 0;
  std::array<std::byte, wire::kAcqHeaderBytes> head_{};  // a placed echo's header
  std::vector<float> traj_in_, traj_;
  std::vector<cfloat> data_in_, data_;
};

}  // namespace radstream
