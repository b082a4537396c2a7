#include "wire/wire.hpp"

#include <fmt/format.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/version.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "io/mrd_file.hpp"

namespace radstream::wire {

static_assert(std::endian::native == std::endian::little, "the wire format is little-endian");
static_assert(sizeof(ISMRMRD::ISMRMRD_AcquisitionHeader) == kAcqHeaderBytes, "MRD header is 340 bytes");

namespace {

template <class T>
void put(std::byte* base, std::size_t off, T v) {
  std::memcpy(base + off, &v, sizeof(T));
}
template <class T>
T get(const std::byte* base, std::size_t off) {
  T v;
  std::memcpy(&v, base + off, sizeof(T));
  return v;
}

DecodeResult reject(Reject r, std::string detail) {
  DecodeResult d;
  d.reason = r;
  d.detail = std::move(detail);
  return d;
}

bool known_type(std::uint16_t t) {
  switch (MsgType(t)) {
    case MsgType::Header:
    case MsgType::Close:
    case MsgType::Text:
    case MsgType::Spoke:
    case MsgType::Heartbeat:
      return true;
  }
  return false;
}

}  // namespace

std::uint32_t fnv1a(std::span<const std::byte> bytes) {
  std::uint32_t h = 2166136261u;
  for (std::byte b : bytes) {
    h ^= std::uint32_t(b);
    h *= 16777619u;
  }
  return h;
}

std::array<std::byte, kEnvelopeBytes> encode_envelope(const Envelope& e) {
  std::array<std::byte, kEnvelopeBytes> b{};
  std::byte* p = b.data();
  put(p, 0, kMagic);
  put(p, 4, kVersion);
  put(p, 6, e.type);
  put(p, 8, e.sequence);
  put(p, 16, e.stream_id);
  put(p, 20, e.flags);
  put(p, 24, e.spoke_index);
  put(p, 32, e.acquired_ns);
  put(p, 40, e.sent_ns);
  put(p, 48, e.angle);
  put(p, 56, std::uint32_t(0));
  put(p, 60, fnv1a(std::span<const std::byte>(p, 60)));
  return b;
}

const char* to_string(Reject r) {
  switch (r) {
    case Reject::PartCount:
      return "part_count";
    case Reject::EnvelopeSize:
      return "envelope_size";
    case Reject::Magic:
      return "magic";
    case Reject::Version:
      return "version";
    case Reject::Checksum:
      return "checksum";
    case Reject::UnknownType:
      return "unknown_type";
    case Reject::AcqHeaderSize:
      return "acq_header_size";
    case Reject::AcqHeaderVersion:
      return "acq_header_version";
    case Reject::Limits:
      return "limits";
    case Reject::TrajSize:
      return "traj_size";
    case Reject::DataSize:
      return "data_size";
    case Reject::NonFinite:
      return "non_finite";
    case Reject::TrajRange:
      return "traj_range";
    case Reject::BadText:
      return "bad_text";
    case Reject::NoHeader:
      return "no_header";
    case Reject::GeometryMismatch:
      return "geometry_mismatch";
    case Reject::Duplicate:
      return "duplicate";
    case Reject::Late:
      return "late";
    case Reject::ForeignStream:
      return "foreign_stream";
    case Reject::SliceRange:
      return "slice_range";
    case Reject::NoAngle:
      return "no_angle";
    case Reject::PartitionRange:
      return "partition_range";
    case Reject::Count:
      break;
  }
  return "unknown";
}

bool all_finite(std::span<const std::byte> bytes) {
  const std::size_t n = bytes.size() / sizeof(float);
  const std::byte* p = bytes.data();
  // Exponent bits all ones means Inf or NaN; OR-reduce blocks so the loop vectorizes.
  constexpr std::uint32_t kExp = 0x7f800000u;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    std::uint32_t bad = 0;
    for (std::size_t k = 0; k < 16; ++k) {
      std::uint32_t u;
      std::memcpy(&u, p + (i + k) * 4, 4);
      bad |= std::uint32_t((u & kExp) == kExp);
    }
    if (bad) return false;
  }
  for (; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, p + i * 4, 4);
    if ((u & kExp) == kExp) return false;
  }
  return true;
}

DecodeResult decode(std::span<const std::span<const std::byte>> parts, const Limits& limits) {
  if (parts.empty()) return reject(Reject::PartCount, "empty message");
  const auto f0 = parts[0];
  if (f0.size() != kEnvelopeBytes)
    return reject(Reject::EnvelopeSize, fmt::format("envelope is {} bytes, expected 64", f0.size()));
  const std::byte* p = f0.data();
  if (get<std::uint32_t>(p, 0) != kMagic)
    return reject(Reject::Magic,
                  fmt::format("magic 0x{:08x}, expected 0x{:08x}", get<std::uint32_t>(p, 0), kMagic));
  if (get<std::uint16_t>(p, 4) != kVersion)
    return reject(Reject::Version,
                  fmt::format("version {}, this receiver speaks {}", get<std::uint16_t>(p, 4), kVersion));
  if (get<std::uint32_t>(p, 60) != fnv1a(f0.first(60)))
    return reject(Reject::Checksum, "envelope checksum mismatch");
  DecodeResult d;
  Envelope& e = d.msg.env;
  e.type = get<std::uint16_t>(p, 6);
  e.sequence = get<std::uint64_t>(p, 8);
  e.stream_id = get<std::uint32_t>(p, 16);
  e.flags = get<std::uint32_t>(p, 20);
  e.spoke_index = get<std::uint64_t>(p, 24);
  e.acquired_ns = get<std::int64_t>(p, 32);
  e.sent_ns = get<std::int64_t>(p, 40);
  e.angle = get<double>(p, 48);
  if (!known_type(e.type)) return reject(Reject::UnknownType, fmt::format("message type {}", e.type));
  const auto type = MsgType(e.type);
  if (type == MsgType::Close || type == MsgType::Heartbeat) {
    if (parts.size() != 1)
      return reject(Reject::PartCount,
                    fmt::format("type {} has {} frames, expected 1", e.type, parts.size()));
    d.ok = true;
    return d;
  }
  if (type == MsgType::Header || type == MsgType::Text) {
    if (parts.size() != 2)
      return reject(Reject::PartCount,
                    fmt::format("type {} has {} frames, expected 2", e.type, parts.size()));
    const auto t = parts[1];
    if (t.empty() || t.size() > limits.max_text_bytes)
      return reject(Reject::BadText,
                    fmt::format("text of {} bytes (limit {})", t.size(), limits.max_text_bytes));
    d.msg.text.assign(reinterpret_cast<const char*>(t.data()), t.size());
    d.ok = true;
    return d;
  }
  // Spoke.
  if (parts.size() != 4)
    return reject(Reject::PartCount, fmt::format("spoke has {} frames, expected 4", parts.size()));
  if (parts[1].size() != kAcqHeaderBytes)
    return reject(Reject::AcqHeaderSize,
                  fmt::format("acquisition header is {} bytes, expected 340", parts[1].size()));
  ISMRMRD::ISMRMRD_AcquisitionHeader a;
  std::memcpy(&a, parts[1].data(), kAcqHeaderBytes);
  if (a.version != ISMRMRD_VERSION_MAJOR)
    return reject(Reject::AcqHeaderVersion, fmt::format("acquisition header version {}", a.version));
  const int samples = a.number_of_samples, coils = a.active_channels, dims = a.trajectory_dimensions;
  if (samples < 1 || samples > limits.max_samples || coils < 1 || coils > limits.max_coils ||
      (dims != 0 && dims != 2 && dims != 3))
    return reject(Reject::Limits,
                  fmt::format("samples {} (1..{}), coils {} (1..{}), trajectory dims {} (0, 2 or 3)", samples,
                              limits.max_samples, coils, limits.max_coils, dims));
  const std::size_t traj_bytes = std::size_t(samples) * dims * sizeof(float);
  const std::size_t data_bytes = std::size_t(samples) * coils * 2 * sizeof(float);
  if (parts[2].size() != traj_bytes)
    return reject(Reject::TrajSize, fmt::format("trajectory is {} bytes, {} samples x {} dims need {}",
                                                parts[2].size(), samples, dims, traj_bytes));
  if (parts[3].size() != data_bytes)
    return reject(Reject::DataSize, fmt::format("data is {} bytes, {} coils x {} samples need {}",
                                                parts[3].size(), coils, samples, data_bytes));
  Message& m = d.msg;
  m.samples = samples;
  m.coils = coils;
  m.traj_dims = dims;
  m.traj = parts[2];
  m.data = parts[3];
  m.head.scan_counter = a.scan_counter;
  m.head.flags = a.flags;
  m.head.acquisition_time_stamp = a.acquisition_time_stamp;
  m.head.slice = a.idx.slice;
  m.head.partition = a.idx.kspace_encode_step_2;
  m.head.spoke_index = e.spoke_index;
  m.head.acquired_ns = e.acquired_ns;
  m.head.sent_ns = e.sent_ns;
  m.head.angle = e.angle;  // NaN when the sender does not know it: the ingest takes it from the trajectory
  d.ok = true;
  return d;
}

Parts encode_spoke(const Envelope& env, const Spoke& s) {
  Parts parts(4);
  const auto e = encode_envelope(env);
  parts[0].assign(e.begin(), e.end());
  const int dims = s.traj.empty() ? 0 : 2;
  const auto a = acquisition_header_bytes(s.header, s.samples, s.coils, dims, env.stream_id,
                                          std::uint32_t(env.sequence));
  parts[1].assign(a.begin(), a.end());
  const auto* t = reinterpret_cast<const std::byte*>(s.traj.data());
  parts[2].assign(t, t + s.traj.size() * sizeof(float));
  const auto* v = reinterpret_cast<const std::byte*>(s.data.data());
  parts[3].assign(v, v + s.data.size() * sizeof(cfloat));
  return parts;
}

Parts encode_text(const Envelope& env, const std::string& text) {
  Parts parts(2);
  const auto e = encode_envelope(env);
  parts[0].assign(e.begin(), e.end());
  const auto* t = reinterpret_cast<const std::byte*>(text.data());
  parts[1].assign(t, t + text.size());
  return parts;
}

Parts encode_bare(const Envelope& env) {
  Parts parts(1);
  const auto e = encode_envelope(env);
  parts[0].assign(e.begin(), e.end());
  return parts;
}

std::array<std::byte, 64> encode_image_header(const ImageHeader& h) {
  std::array<std::byte, 64> b{};
  auto put = [&](std::size_t off, auto v) { std::memcpy(b.data() + off, &v, sizeof(v)); };
  put(0, kImageMagic);
  put(4, std::uint16_t(1));
  put(6, h.slice);
  put(8, h.number);
  put(16, h.matrix);
  put(20, h.window);
  put(24, h.first_spoke);
  put(32, h.last_spoke);
  put(40, h.last_acquired_ns);
  put(48, h.ready_ns);
  put(56, h.depth);
  return b;
}

std::optional<ImageHeader> decode_image_header(std::span<const std::byte> b) {
  if (b.size() != 64) return std::nullopt;
  auto get = [&](std::size_t off, auto& v) { std::memcpy(&v, b.data() + off, sizeof(v)); };
  std::uint32_t magic = 0;
  std::uint16_t version = 0;
  get(0, magic);
  get(4, version);
  if (magic != kImageMagic || version != 1) return std::nullopt;
  ImageHeader h;
  get(6, h.slice);
  get(8, h.number);
  get(16, h.matrix);
  get(20, h.window);
  get(24, h.first_spoke);
  get(32, h.last_spoke);
  get(40, h.last_acquired_ns);
  get(48, h.ready_ns);
  get(56, h.depth);
  if (h.depth == 0) h.depth = 1;  // a sender that left the reserved bytes zero: a 2D image
  return h;
}

bool trajectory_in_range(std::span<const std::byte> traj, int dims) {
  if (dims < 1) return true;
  const std::size_t n = traj.size() / (sizeof(float) * std::size_t(dims));
  const int checked = std::min(dims, 2);
  for (std::size_t i = 0; i < n; ++i)
    for (int d = 0; d < checked; ++d) {
      float v;
      std::memcpy(&v, traj.data() + (i * std::size_t(dims) + std::size_t(d)) * sizeof(float), sizeof v);
      if (!(std::fabs(v) <= kMaxTrajectoryK)) return false;
    }
  return true;
}

}  // namespace radstream::wire
