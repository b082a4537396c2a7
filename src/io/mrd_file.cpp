#include "io/mrd_file.hpp"

#include <fmt/format.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/xml.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "core/error.hpp"
#include "io/asymmetric_echo.hpp"
#include "io/hdf5_errors.hpp"
#include "io/input_file.hpp"
#include "io/mrd_raw.hpp"
#include "io/mrd_reader.hpp"
#include "io/mrd_xml_numbers.hpp"

namespace radstream {

void StreamHeader::validate() const {
  geometry(1).validate();
  angles.validate();
  if (!(fov_mm > 0)) throw ConfigError(fmt::format("fov_mm = {} must be > 0", fov_mm));
  if (partitions < 1 || partitions > kMaxPartitions)
    throw ConfigError(fmt::format("partitions = {} must be 1..{}", partitions, kMaxPartitions));
}

namespace {

constexpr const char* kTrajId = "radstream_radial";

int scheme_code(AngleScheme s) {
  return static_cast<int>(s);
}

AngleScheme scheme_from_code(long c, const std::string& ctx) {
  if (c < 0 || c > 4) throw IoError(fmt::format("{}: angle_scheme {} is not 0..4", ctx, c));
  return static_cast<AngleScheme>(c);
}

}  // namespace

void check_hdf5_file(const std::string& path) {
  check_input_file(path, "HDF5 file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError(fmt::format("{}: cannot open the file", path));
  char sig[8] = {};
  f.read(sig, 8);
  static const char kSig[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  if (!f || std::memcmp(sig, kSig, 8) != 0) throw IoError(fmt::format("{}: not an HDF5 (MRD) file", path));
}

std::string stream_header_to_xml(const StreamHeader& h) {
  ISMRMRD::IsmrmrdHeader x;
  x.experimentalConditions.H1resonanceFrequency_Hz = 63500000;
  ISMRMRD::AcquisitionSystemInformation sys;
  sys.receiverChannels = static_cast<unsigned short>(h.coils);
  sys.systemVendor = std::string("radstream");
  x.acquisitionSystemInformation = sys;
  ISMRMRD::Encoding e;
  e.encodedSpace.matrixSize = ISMRMRD::MatrixSize(h.samples, h.matrix, h.partitions);
  e.encodedSpace.fieldOfView_mm = {float(h.fov_mm * h.readout_os), float(h.fov_mm), 5.f};
  e.reconSpace.matrixSize = ISMRMRD::MatrixSize(h.matrix, h.matrix, h.partitions);
  e.reconSpace.fieldOfView_mm = {float(h.fov_mm), float(h.fov_mm), 5.f};
  e.trajectory = h.angles.scheme == AngleScheme::Golden ? ISMRMRD::TrajectoryType::GOLDENANGLE
                                                        : ISMRMRD::TrajectoryType::RADIAL;
  ISMRMRD::TrajectoryDescription td;
  td.identifier = kTrajId;
  td.userParameterLong = {{"angle_scheme", scheme_code(h.angles.scheme)},
                          {"tiny_golden_n", h.angles.tiny_n},
                          {"spokes_per_rotation", h.angles.spokes_per_rotation},
                          {"turns", h.angles.turns}};
  td.userParameterDouble = {
      {"readout_oversampling", h.readout_os}, {"trajectory_scale", 1.0}, {"spoke_rate_hz", h.spoke_rate_hz}};
  td.comment = std::string("k in cycles/pixel of the reconstructed matrix; angle in user_float[0] (radians)");
  e.trajectoryDescription = td;
  e.encodingLimits.kspace_encoding_step_1 = ISMRMRD::Limit(0, 65535, 0);
  if (h.partitions > 1)  // a stack of stars: kz partitions 0..P-1, k = 0 at P/2
    e.encodingLimits.kspace_encoding_step_2 = ISMRMRD::Limit(0, h.partitions - 1, h.partitions / 2);
  x.encoding.push_back(e);
  std::ostringstream s;
  ISMRMRD::serialize(x, s);
  return s.str();
}

StreamHeader stream_header_from_xml(const std::string& xml, const std::string& ctx) {
  check_mrd_xml_numbers(xml, ctx);
  ISMRMRD::IsmrmrdHeader x;
  try {
    ISMRMRD::deserialize(xml.c_str(), x);
  } catch (const std::exception& e) {
    throw IoError(fmt::format("{}: the MRD XML header is malformed: {}", ctx, e.what()));
  }
  if (x.encoding.empty()) throw IoError(fmt::format("{}: the MRD XML header has no encoding", ctx));
  const auto& e = x.encoding[0];
  StreamHeader h;
  h.matrix = e.reconSpace.matrixSize.x;
  h.samples = e.encodedSpace.matrixSize.x;
  h.fov_mm = e.reconSpace.fieldOfView_mm.x > 0 ? e.reconSpace.fieldOfView_mm.x : 256.0;
  h.readout_os = h.matrix > 0 ? float(h.samples) / float(h.matrix) : 1.f;
  h.coils = 0;
  if (x.acquisitionSystemInformation && x.acquisitionSystemInformation->receiverChannels)
    h.coils = *x.acquisitionSystemInformation->receiverChannels;
  h.angles.scheme =
      e.trajectory == ISMRMRD::TrajectoryType::GOLDENANGLE ? AngleScheme::Golden : AngleScheme::Linear180;
  if (e.encodingLimits.kspace_encoding_step_1)
    h.angles.spokes_per_rotation = std::max<int>(1, e.encodingLimits.kspace_encoding_step_1->maximum + 1);
  else if (e.trajectory == ISMRMRD::TrajectoryType::RADIAL)
    h.angles_unknown =
        "a radial header without encodingLimits.kspace_encoding_step_1 (the spokes per rotation) or "
        "radstream's userParameterLong angle_scheme";
  // A stack of stars (Cartesian kz): its partitions are the encoding limits of kspace_encoding_step_2, else
  // the encoded space's z.
  if (e.encodingLimits.kspace_encoding_step_2 && e.encodingLimits.kspace_encoding_step_2->maximum > 0)
    h.partitions = int(e.encodingLimits.kspace_encoding_step_2->maximum) + 1;
  else if (e.encodedSpace.matrixSize.z > 1)
    h.partitions = int(e.encodedSpace.matrixSize.z);
  if (e.trajectoryDescription) {
    for (const auto& p : e.trajectoryDescription->userParameterLong) {
      if (p.name == "angle_scheme")
        h.angles.scheme = scheme_from_code(p.value, ctx), h.angles_unknown.clear();
      if (p.name == "tiny_golden_n") h.angles.tiny_n = int(p.value);
      if (p.name == "spokes_per_rotation") h.angles.spokes_per_rotation = int(p.value);
      if (p.name == "turns" && p.value >= 1 && p.value <= 1024) h.angles.turns = int(p.value);
    }
    for (const auto& p : e.trajectoryDescription->userParameterDouble) {
      if (p.name == "readout_oversampling") h.readout_os = float(p.value);
      if (p.name == "spoke_rate_hz") h.spoke_rate_hz = p.value;
    }
  }
  if (e.trajectory != ISMRMRD::TrajectoryType::RADIAL && e.trajectory != ISMRMRD::TrajectoryType::GOLDENANGLE)
    throw IoError(fmt::format("{}: the trajectory is not radial", ctx));
  try {
    StreamHeader check = h;
    if (check.coils == 0) check.coils = 1;  // coil count may come from the acquisitions
    check.validate();
  } catch (const ConfigError& err) {
    throw IoError(fmt::format("{}: MRD header: {}", ctx, err.what()));
  }
  return h;
}

std::array<std::byte, 340> acquisition_header_bytes(const SpokeHeader& h, int samples, int coils,
                                                    int traj_dims, std::uint32_t stream_id,
                                                    std::uint32_t sequence) {
  static_assert(sizeof(ISMRMRD::ISMRMRD_AcquisitionHeader) == 340, "the MRD acquisition header is 340 bytes");
  ISMRMRD::ISMRMRD_AcquisitionHeader a;
  ISMRMRD::ismrmrd_init_acquisition_header(&a);
  a.flags = h.flags;
  a.scan_counter = h.scan_counter;
  a.acquisition_time_stamp = h.acquisition_time_stamp;
  a.number_of_samples = std::uint16_t(samples);
  a.available_channels = std::uint16_t(coils);
  a.active_channels = std::uint16_t(coils);
  a.center_sample = std::uint16_t(samples / 2);
  a.trajectory_dimensions = std::uint16_t(traj_dims);
  a.idx.kspace_encode_step_1 = std::uint16_t(h.spoke_index & 0xffffu);
  a.idx.slice = h.slice;
  a.idx.kspace_encode_step_2 = h.partition;
  a.user_float[0] = float(h.angle);
  split64(h.acquired_ns, a.user_int[0], a.user_int[1]);
  split64(h.sent_ns, a.user_int[2], a.user_int[3]);
  split64(std::int64_t(h.spoke_index), a.user_int[4], a.user_int[5]);
  a.user_int[6] = std::int32_t(stream_id);
  a.user_int[7] = std::int32_t(sequence);
  std::array<std::byte, 340> b;
  std::memcpy(b.data(), &a, b.size());
  return b;
}

MrdWriter::MrdWriter(const std::string& path, const StreamHeader& header, std::uint32_t stream_id)
    : header_(header), stream_id_(stream_id) {
  header.validate();
  while (stream_id_ == 0) stream_id_ = std::random_device{}();
  raw_ = std::make_unique<MrdRawWriter>(path, stream_header_to_xml(header));
}

MrdWriter::~MrdWriter() = default;

std::size_t MrdWriter::count() const {
  return raw_->count();
}

void MrdWriter::append(const Spoke& s) {
  if (s.samples != header_.samples || s.coils != header_.coils)
    throw InputError(fmt::format("{}: spoke {} is {} samples x {} coils, the header says {} x {}",
                                 raw_->path(), s.header.spoke_index, s.samples, s.coils, header_.samples,
                                 header_.coils));
  raw_->append(acquisition_header_bytes(s.header, s.samples, s.coils, 2, stream_id_, ++sequence_), s.traj,
               s.data);
}

MrdRecording read_mrd(const std::string& path, long start, long count) {
  MrdRecording rec;
  rec.header = visit_mrd(
      path, start, count, [&](const StreamHeader&, std::size_t n) { rec.spokes.reserve(n); },
      [&](std::size_t, Spoke&& s) { rec.spokes.push_back(std::move(s)); });
  return rec;
}

StreamHeader visit_mrd(const std::string& path, long start, long count,
                       const std::function<void(const StreamHeader&, std::size_t)>& sized,
                       const std::function<void(std::size_t, Spoke&&)>& take) {
  MrdReader reader(path);  // never reads past what the file stores
  StreamHeader header = stream_header_from_xml(reader.xml(), path);
  const std::size_t n = reader.count();
  if (start < 0 || std::size_t(start) > n)
    throw IoError(fmt::format("{}: start spoke {} is outside 0..{}", path, start, n));
  const std::size_t end = count < 0 ? n : std::min<std::size_t>(n, std::size_t(start) + std::size_t(count));
  if (header.coils == 0 && end > std::size_t(start)) {  // the first acquisition says it
    ISMRMRD::ISMRMRD_AcquisitionHeader h;
    std::memcpy(&h, reader.read(std::size_t(start)).acq_header.data(), sizeof(h));
    header.coils = h.active_channels;
  }
  if (header.coils == 0)
    throw IoError(fmt::format("{}: the header declares no coils and there are no spokes", path));
  sized(header, end - std::size_t(start));
  for (std::size_t i = std::size_t(start); i < end; ++i) {
    RawSpoke raw = reader.read(i);
    ISMRMRD::ISMRMRD_AcquisitionHeader h;
    std::memcpy(&h, raw.acq_header.data(), sizeof(h));
    if (header.coils == 0) header.coils = h.active_channels;
    if (const Readout r{h.number_of_samples, h.center_sample}; is_partial_echo(r, header.samples)) {
      // a partial echo: into the symmetric readout the header declares (io/asymmetric_echo.hpp)
      std::vector<float> traj;
      std::vector<cfloat> data;
      place_partial_echo(r, header.samples, h.active_channels, h.trajectory_dimensions, raw.traj, raw.data,
                         traj, data);
      raw.traj = std::move(traj);
      raw.data = std::move(data);
      h.number_of_samples = std::uint16_t(header.samples);
      h.center_sample = std::uint16_t(header.samples / 2);
    }
    if (h.number_of_samples != header.samples || h.active_channels != header.coils)
      throw IoError(
          fmt::format("{}: acquisition {} has {} samples x {} coils, the XML header declares {} x {}", path,
                      i, h.number_of_samples, h.active_channels, header.samples, header.coils));
    if (h.trajectory_dimensions != 0 && h.trajectory_dimensions != 2)
      throw IoError(fmt::format("{}: acquisition {} has trajectory_dimensions {}, expected 2 (or 0)", path, i,
                                h.trajectory_dimensions));
    Spoke s;
    s.samples = h.number_of_samples;
    s.coils = h.active_channels;
    s.header.scan_counter = h.scan_counter;
    s.header.acquisition_time_stamp = h.acquisition_time_stamp;
    s.header.flags = h.flags;
    s.header.slice = h.idx.slice;
    s.header.partition = h.idx.kspace_encode_step_2;
    s.header.acquired_ns = join64(h.user_int[0], h.user_int[1]);
    s.header.sent_ns = join64(h.user_int[2], h.user_int[3]);
    const std::int64_t full = join64(h.user_int[4], h.user_int[5]);
    s.header.spoke_index =
        full != 0 || h.idx.kspace_encode_step_1 == 0 ? std::uint64_t(full) : h.idx.kspace_encode_step_1;
    s.header.angle = std::isfinite(h.user_float[0]) && h.trajectory_dimensions == 2
                         ? double(h.user_float[0])
                         : header.angles.angle(std::int64_t(s.header.spoke_index));
    s.traj.resize(2 * std::size_t(s.samples));
    if (h.trajectory_dimensions == 2)
      s.traj = raw.traj;
    else
      spoke_coordinates(s.header.angle, s.samples, s.traj);
    s.data = raw.data;
    // As the stream does: NaN or Inf in a file is an error naming the acquisition, never a NaN image; and a
    // point far outside k-space (|k| > 0.75 cycles per pixel) too.
    for (const auto& v : s.data)
      if (!std::isfinite(v.real()) || !std::isfinite(v.imag()))
        throw IoError(fmt::format("{}: acquisition {} has NaN or Inf in its data", path, i));
    for (const float v : s.traj)
      if (!std::isfinite(v) || std::abs(v) > 0.75f)
        throw IoError(fmt::format(
            "{}: acquisition {} has a trajectory value {} outside |k| <= 0.75 cycles/pixel", path, i, v));
    take(i - std::size_t(start), std::move(s));
  }
  return header;
}

}  // namespace radstream
