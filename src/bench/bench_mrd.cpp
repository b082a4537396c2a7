// The MRD decode case (issue 28): acquisitions of the case's coils x samples encoded once into memory, then
// decoded by the MRD codec (io/mrd_protocol.hpp) on one core, as an MRD session's reader thread does.
#include <fmt/format.h>
#include <ismrmrd/ismrmrd.h>

#include <chrono>
#include <cstring>

#include "bench/bench_case.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"
#include "io/mrd_protocol.hpp"

namespace radstream::app {

nlohmann::ordered_json mrd_decode_case(const BenchCase& c) {
  const int S = c.samples, C = c.coils, K = 256;  // 256 distinct acquisitions, decoded over and over
  ISMRMRD::ISMRMRD_AcquisitionHeader h;
  ISMRMRD::ismrmrd_init_acquisition_header(&h);
  h.number_of_samples = std::uint16_t(S);
  h.active_channels = std::uint16_t(C);
  h.available_channels = std::uint16_t(C);
  h.trajectory_dimensions = 2;
  std::vector<float> traj(std::size_t(S) * 2);
  std::vector<cfloat> data(std::size_t(S) * C);
  std::vector<std::byte> stream;
  for (int k = 0; k < K; ++k) {
    h.scan_counter = std::uint32_t(k);
    for (std::size_t i = 0; i < traj.size(); ++i) traj[i] = float(i % 97) * 1e-3f;
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = cfloat(float(i % 13), float(k));
    mrd::append_acquisition(stream, std::as_bytes(std::span(&h, 1)), traj, data);
  }
  const long total = c.total_spokes;
  mrd::Limits lim;
  std::size_t decoded = 0;
  double checksum = 0;
  const std::int64_t t0 = monotonic_ns();
  while (long(decoded) < total) {
    mrd::MemorySource src(stream);
    while (auto m = mrd::read_message(src, lim)) {
      checksum += double(m->acq.data.back().real());  // the decoded values are used
      if (long(++decoded) >= total) break;
    }
  }
  const double secs = double(monotonic_ns() - t0) * 1e-9;
  const double bytes = double(stream.size()) / K;
  const double rate = double(decoded) / secs;
  log::info("bench {}: {} acquisitions of {} coils x {} decoded in {:.3f} s: {:.0f}/s, {:.2f} GB/s (checksum {:g})",
            c.name, decoded, C, S, secs, rate, rate * bytes * 1e-9, checksum);
  return {{"case", c.name},
          {"what", c.what},
          {"kind", "mrd-decode"},
          {"backend", "cpu"},
          {"acquisitions", decoded},
          {"seconds", secs},
          {"acquisitions_per_s", rate},
          {"gb_per_s", rate * bytes * 1e-9},
          {"coils", C},
          {"samples", S}};
}

}  // namespace radstream::app
