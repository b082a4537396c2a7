#include "stream/spoke_conditioner.hpp"

#include <fmt/format.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/xml.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "core/error.hpp"
#include "io/asymmetric_echo.hpp"

namespace radstream {

namespace {

bool flag(std::uint64_t flags, int bit) {
  return (flags >> (bit - 1)) & 1u;
}

// Acquisitions that are not imaging spokes of the stream. ISMRMRD's flags are 1-based bit numbers;
// PARALLEL_CALIBRATION_AND_IMAGING (21) is imaging data.
bool non_imaging(std::uint64_t f) {
  using namespace ISMRMRD;
  if (flag(f, ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION) &&
      !flag(f, ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION_AND_IMAGING))
    return true;
  for (int b : {ISMRMRD_ACQ_IS_NAVIGATION_DATA, ISMRMRD_ACQ_IS_PHASECORR_DATA, ISMRMRD_ACQ_IS_HPFEEDBACK_DATA,
                ISMRMRD_ACQ_IS_DUMMYSCAN_DATA, ISMRMRD_ACQ_IS_RTFEEDBACK_DATA,
                ISMRMRD_ACQ_IS_SURFACECOILCORRECTIONSCAN_DATA, ISMRMRD_ACQ_IS_PHASE_STABILIZATION_REFERENCE,
                ISMRMRD_ACQ_IS_PHASE_STABILIZATION})
    if (flag(f, b)) return true;
  return false;
}

}  // namespace

bool SpokeConditioner::imaging(std::uint64_t flags) {
  return !flag(flags, ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT) && !non_imaging(flags);
}

void SpokeConditioner::new_stream(int samples_full, int coils, const std::string& xml,
                                  NoisePrewhitener::MakeCovariance covariance) {
  samples_full_ = samples_full;
  coils_ = coils;
  noise_ = NoisePrewhitener(std::move(covariance));
  noise_failed_ = false;
  bandwidth_ = 0.793;
  try {
    ISMRMRD::IsmrmrdHeader x;
    ISMRMRD::deserialize(xml.c_str(), x);
    if (x.acquisitionSystemInformation && x.acquisitionSystemInformation->relativeReceiverNoiseBandwidth)
      bandwidth_ = *x.acquisitionSystemInformation->relativeReceiverNoiseBandwidth;
  } catch (const std::exception&) {  // the header was checked already; a field ISMRMRD cannot read is unset
  }
}

SpokeConditioner::Kind SpokeConditioner::take(wire::Message& m, std::span<const std::byte>& acq_header) {
  if (acq_header.size() != sizeof(ISMRMRD::ISMRMRD_AcquisitionHeader))
    throw InputError(fmt::format("an acquisition header of {} bytes", acq_header.size()));
  ISMRMRD::ISMRMRD_AcquisitionHeader h;
  std::memcpy(&h, acq_header.data(), sizeof h);
  const auto as_cfloats = [](std::span<const std::byte> b, std::vector<cfloat>& out) {
    out.resize(b.size() / sizeof(cfloat));
    std::memcpy(out.data(), b.data(), out.size() * sizeof(cfloat));  // the bytes may not be aligned
  };
  if (flag(m.head.flags, ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT)) {
    if (m.coils != coils_)
      throw InputError(fmt::format("a noise acquisition of {} coils in a stream of {}", m.coils, coils_));
    if (noise_.noise_samples() + std::size_t(m.samples) > kMaxNoiseSamples) return Kind::NoiseOverBudget;
    as_cfloats(m.data, data_in_);
    noise_.add_noise(data_in_, m.coils, m.samples, h.sample_time_us);
    return Kind::Noise;
  }
  if (non_imaging(m.head.flags)) return Kind::NonImaging;
  if (const Readout r{m.samples, h.center_sample}; is_partial_echo(r, samples_full_)) {
    traj_in_.resize(m.traj.size() / sizeof(float));
    std::memcpy(traj_in_.data(), m.traj.data(), traj_in_.size() * sizeof(float));
    as_cfloats(m.data, data_in_);
    place_partial_echo(r, samples_full_, m.coils, m.traj_dims, traj_in_, data_in_, traj_, data_);
    h.number_of_samples = std::uint16_t(samples_full_);
    h.center_sample = std::uint16_t(samples_full_ / 2);
    std::memcpy(head_.data(), &h, sizeof h);
    acq_header = head_;
    m.samples = samples_full_;
    m.traj = std::as_bytes(std::span(traj_));
    m.data = std::as_bytes(std::span(data_));
    if (++partial_echoes_ == 1)
      note_.text = fmt::format("partial echoes ({} samples, k = 0 at {}) placed into readouts of {}",
                               r.samples, r.center_sample, samples_full_);
  }
  if (noise_.has_noise() && !noise_.ready() && !noise_failed_) {  // made at the first imaging spoke
    try {
      noise_.prepare(h.sample_time_us, bandwidth_);
      note_ = {"prewhitening: " + noise_.summary(), false};
    } catch (const InputError& e) {
      noise_failed_ = true;
      note_ = {std::string("no prewhitening: ") + e.what(), true};
    }
  }
  if (noise_.ready()) {
    if (std::size_t(m.coils) * std::size_t(m.coils) != noise_.covariance().size())
      throw InputError(fmt::format("a spoke of {} coils after noise scans of {}", m.coils,
                                   int(std::sqrt(double(noise_.covariance().size())))));
    if (m.data.data() != static_cast<const void*>(data_.data())) {
      as_cfloats(m.data, data_);
      m.data = std::as_bytes(std::span(data_));
    }
    noise_.apply(data_, m.samples);
  }
  return Kind::Imaging;
}

}  // namespace radstream
