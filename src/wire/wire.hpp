// The radstream wire protocol (DESIGN.md section 4; the full description for a sender is in
// docs/protocol.md). One ZeroMQ multipart message per item, little-endian:
//   F0  64-byte envelope (below)
//   F1  spoke: the MRD (ISMRMRD v1) AcquisitionHeader, 340 bytes verbatim; header/text: UTF-8 text
//   F2  spoke: trajectory float32[samples][dims] (empty when dims = 0)
//   F3  spoke: data complex64[coils][samples]
// This file is pure: encoding into bytes and decoding/validating from byte spans, no sockets, so that the
// decoder can be fuzzed. Nothing here reads a byte before checking that it is there.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/spoke.hpp"

namespace radstream::wire {

constexpr std::uint32_t kMagic = 0x4D545352u;  // the bytes "RSTM"
constexpr std::uint16_t kVersion = 1;
constexpr std::size_t kEnvelopeBytes = 64;
constexpr std::size_t kAcqHeaderBytes = 340;

enum class MsgType : std::uint16_t { Header = 3, Close = 4, Text = 5, Spoke = 1008, Heartbeat = 4097 };

// Envelope flags of a stream header: its spokes carry a recording's acquisition times (a verbatim replay),
// not this session's clock, so their age is no latency.
constexpr std::uint32_t kFlagRecordedClock = 1u;

// Byte offsets: magic 0 (u32), version 4 (u16), type 6 (u16), sequence 8 (u64), stream_id 16 (u32),
// flags 20 (u32), spoke_index 24 (u64), acquired_ns 32 (i64), sent_ns 40 (i64), angle 48 (f64, NaN when
// unknown), reserved 56 (u32, 0), checksum 60 (u32: FNV-1a of bytes 0..59).
struct Envelope {
  std::uint16_t type = 0;
  std::uint64_t sequence = 0;   // per sender, +1 for every message it sends
  std::uint32_t stream_id = 0;  // a sender's stream; a new id means a new sender (or a restart)
  std::uint32_t flags = 0;
  std::uint64_t spoke_index = 0;  // spoke: its index; close: number of spokes sent
  std::int64_t acquired_ns = 0;   // CLOCK_MONOTONIC ns at acquisition
  std::int64_t sent_ns = 0;       // CLOCK_MONOTONIC ns at send
  double angle = 0.0;             // radians
};

std::array<std::byte, kEnvelopeBytes> encode_envelope(const Envelope& e);
std::uint32_t fnv1a(std::span<const std::byte> bytes);

// Every reason a message is rejected; counted per reason by the ingest.
enum class Reject {
  PartCount,         // wrong number of frames for the type
  EnvelopeSize,      // F0 is not 64 bytes
  Magic,             // not "RSTM"
  Version,           // unsupported version
  Checksum,          // envelope checksum mismatch
  UnknownType,       // type not in MsgType
  AcqHeaderSize,     // F1 of a spoke is not 340 bytes
  AcqHeaderVersion,  // MRD header version is not 1
  Limits,            // samples, coils or dims beyond the configured limits (or zero)
  TrajSize,          // F2 size != samples x dims x 4
  DataSize,          // F3 size != coils x samples x 8
  NonFinite,         // NaN or Inf in the trajectory or the data
  TrajRange,         // a trajectory point outside |k| <= 0.75 cycles/pixel (kx or ky)
  BadText,           // header text empty, too long or not XML radstream can use
  NoHeader,          // a spoke before any stream header
  GeometryMismatch,  // samples or coils differ from the stream header
  Duplicate,         // a sequence number already seen
  Late,              // an older sequence number not seen before (reordered)
  ForeignStream,     // a message of another stream than the one the pipeline follows
  SliceRange,        // a spoke of a slice (idx.slice) beyond those the pipeline reconstructs (stream.slices)
  NoAngle,           // a spoke without trajectory whose angle the stream header cannot give
  PartitionRange,    // a spoke of a kz partition (idx.kspace_encode_step_2) beyond those the header declares
  Count
};
constexpr int kRejectCount = int(Reject::Count);
const char* to_string(Reject r);

struct Limits {
  int max_samples = 16384;
  int max_coils = 128;
  std::size_t max_text_bytes = 1 << 20;
};

// A message viewed in place: spans point into the received frames.
struct Message {
  Envelope env;
  // Spoke:
  SpokeHeader head;
  int samples = 0, coils = 0, traj_dims = 0;
  std::span<const std::byte> traj, data;  // sizes checked; the values are not (see all_finite)
  // Header / text:
  std::string text;
};

struct DecodeResult {
  bool ok = false;
  Reject reason = Reject::Count;
  std::string detail;  // says what was wrong, with the values
  Message msg;
};

// Validates the frames and views the message. Never reads out of bounds, never allocates more than the text
// limit, whatever the bytes.
DecodeResult decode(std::span<const std::span<const std::byte>> parts, const Limits& limits);

// True when every float in the bytes is finite (the bytes are a whole number of floats).
bool all_finite(std::span<const std::byte> floats);

// The k-space bound of the stream's trajectories (cycles per pixel; a spoke spans [-0.5, 0.5), readout
// oversampling included), and whether every kx, ky of a [S][D] float trajectory keeps within it.
inline constexpr float kMaxTrajectoryK = 0.75f;
bool trajectory_in_range(std::span<const std::byte> traj, int dims);

// A whole message as byte vectors (for tests and the fuzzer). A spoke's F1 is acquisition_header_bytes()
// (io/mrd_file.hpp) with the envelope's stream id and sequence.
using Parts = std::vector<std::vector<std::byte>>;
Parts encode_spoke(const Envelope& env, const Spoke& s);
Parts encode_text(const Envelope& env, const std::string& text);  // Header, Text
Parts encode_bare(const Envelope& env);                           // Close, Heartbeat

// The published image message (docs/protocol.md): frame 0 is this 64-byte header, frame 1 float32 [N][N]
// magnitudes. Layout: magic "RSIM" (u32), version u16 = 1, slice u16 (6; 0 for a one-slice stream), frame
// number u64 (8, per slice), matrix u32 (16),
// window u32 (20), first/last spoke index u64 x 2 (24, 32), last acquired ns i64 (40), ready ns i64 (48),
// depth u32 (56: the z positions of a stack of stars' volume, frame 1 float32 [depth][N][N]; 0 or 1: a 2D
// image), reserved to 64 bytes.
constexpr std::uint32_t kImageMagic = 0x4D495352u;
struct ImageHeader {
  std::uint64_t number = 0;
  std::uint32_t matrix = 0, window = 0;
  std::uint64_t first_spoke = 0, last_spoke = 0;
  std::int64_t last_acquired_ns = 0, ready_ns = 0;
  std::uint16_t slice = 0;
  std::uint32_t depth = 1;
};
std::array<std::byte, 64> encode_image_header(const ImageHeader& h);
// The header of a published image message; nullopt unless it is 64 bytes with the magic and version 1.
std::optional<ImageHeader> decode_image_header(std::span<const std::byte> b);

}  // namespace radstream::wire
