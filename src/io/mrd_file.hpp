// MRD (ISMRMRD v1) HDF5 files through libismrmrd's ISMRMRD::Dataset: the XML header plus one acquisition per
// spoke.
//
// Conventions of radstream files (declared in the XML so other tools can read them):
//  - encoding.trajectory = radial; encodedSpace.matrixSize = (samples, matrix); reconSpace = (matrix,
//  matrix);
//  - trajectoryDescription "radstream_radial": userParameterLong angle_scheme (0 linear180, 1 linear360,
//    2 golden, 3 tiny golden), tiny_golden_n, spokes_per_rotation; userParameterDouble readout_oversampling,
//    trajectory_scale (1: coordinates in cycles/pixel of the reconstructed matrix), spoke_rate_hz;
//  - each acquisition: trajectory_dimensions 2 (kx, ky in cycles/pixel), idx.kspace_encode_step_1 = spoke
//  index
//    (mod 65536), user_float[0] = angle in radians, user_int[0..1] = acquisition ns (low, high 32 bits),
//    user_int[2..3] = send ns, user_int[4..5] = full 64-bit spoke index.
// Files from other tools: without the trajectoryDescription, the trajectory is taken from the acquisitions
// when present (in the units that their trajectory_scale says; default cycles/pixel), else derived from the
// angle scheme.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/spoke.hpp"
#include "core/stream_header.hpp"

namespace radstream {

class MrdRawWriter;

// A 64-bit value in two 32-bit MRD user ints, and back.
inline void split64(std::int64_t v, std::int32_t& lo, std::int32_t& hi) {
  const auto u = static_cast<std::uint64_t>(v);
  lo = static_cast<std::int32_t>(static_cast<std::uint32_t>(u & 0xffffffffu));
  hi = static_cast<std::int32_t>(static_cast<std::uint32_t>(u >> 32));
}
inline std::int64_t join64(std::int32_t lo, std::int32_t hi) {
  return static_cast<std::int64_t>((std::uint64_t(std::uint32_t(hi)) << 32) | std::uint32_t(lo));
}

// The MRD AcquisitionHeader (340 bytes, as MRD lays it out) that radstream writes for a spoke, in files and
// on the wire: version 1, samples, coils, trajectory dimensions, the fields listed above, and user_int[6],
// [7] = stream id and sequence (low 32 bits) when a sender gives them.
std::array<std::byte, 340> acquisition_header_bytes(const SpokeHeader& h, int samples, int coils,
                                                    int traj_dims, std::uint32_t stream_id = 0,
                                                    std::uint32_t sequence = 0);

// Throws IoError unless `path` exists and starts with the HDF5 signature.
void check_hdf5_file(const std::string& path);

std::string stream_header_to_xml(const StreamHeader& h);
// Throws IoError (with `context`, e.g. the file name) when the XML is malformed or lacks what radstream
// needs.
StreamHeader stream_header_from_xml(const std::string& xml, const std::string& context);

class MrdWriter {
 public:
  // Creates (or truncates) the file and writes the XML header. Throws IoError. Every acquisition carries the
  // radstream envelope fields (acquired ns, spoke index, a stream id, a sequence number from 1) like a
  // recording of a stream, so that `radstream replay` recognizes the file and paces it by acquisition time.
  // stream_id 0: a random one.
  MrdWriter(const std::string& path, const StreamHeader& header, std::uint32_t stream_id = 0);
  ~MrdWriter();
  void append(const Spoke& spoke);
  std::size_t count() const;

 private:
  StreamHeader header_;
  std::unique_ptr<MrdRawWriter> raw_;
  std::uint32_t stream_id_;
  std::uint32_t sequence_ = 0;
};

struct MrdRecording {
  StreamHeader header;
  std::vector<Spoke> spokes;
};

// Reads spokes [start, start + count) (count < 0: to the end). Throws IoError naming the file and the
// problem: missing file, not HDF5, no XML header, acquisitions whose sample or coil counts disagree with the
// header.
MrdRecording read_mrd(const std::string& path, long start = 0, long count = -1);

// The same spokes one at a time, without holding them all: `sized(header, n)` is called once with the header
// and the number of spokes in the range before the first spoke (it may throw to refuse), then `take(i,
// spoke)` for each, i counting from 0. Returns the header.
StreamHeader visit_mrd(const std::string& path, long start, long count,
                       const std::function<void(const StreamHeader&, std::size_t)>& sized,
                       const std::function<void(std::size_t, Spoke&&)>& take);

}  // namespace radstream
