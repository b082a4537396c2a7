// The MRD (ISMRMRD v1) streaming protocol, as scanners (Siemens FIRE/OpenRecon through
// python-ismrmrd-server), Gadgetron's clients and MRD stream files speak it (docs/protocol.md, "MRD over
// TCP"). Every message is a little-endian uint16 id and a body with no length field of its own: the sizes
// come from the body's own headers, so a reader must know every message it meets, and cannot re-synchronise
// after one it does not.
//   1 config name: 1024 bytes, NUL-padded     2 config text, 3 XML header, 5 text: uint32 length + text
//   4 close: nothing                           6 query: uint64 reserved, uint64 correlation id, uint64 length
//   7 response: uint64 correlation id,           + text (Gadgetron's --info)
//     uint64 length + text
//   1008 acquisition: 340-byte AcquisitionHeader, float32 trajectory [samples][trajectory_dimensions],
//        complex64 data [active_channels][samples]
//   1022 image: 198-byte ImageHeader, uint64 attribute length, attributes (ismrmrdMeta XML), pixels
//   1026 waveform: 40-byte WaveformHeader (naturally aligned, as ISMRMRD's C struct), uint32
//   [channels][samples] 1030 NDArray: uint16 version, uint16 data type, uint16 ndim, uint64 dims[ndim], the
//   elements
// (The python server's "MRD Streaming Format.md" gives the waveform header as 240 bytes; ISMRMRD's own
// struct, which every implementation serialises, is 40: radstream follows the struct.) The same messages
// make an MRD stream file (io/mrd_stream_file.hpp), hence the codec lives in io. This file is pure:
// bytes in, bytes out, every length checked against the limits before anything is allocated, so that it can
// be fuzzed.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/buffer.hpp"

namespace radstream::mrd {

enum Id : std::uint16_t {
  kConfigFile = 1,
  kConfigText = 2,
  kHeader = 3,
  kClose = 4,
  kText = 5,
  kQuery = 6,
  kResponse = 7,
  kAcquisition = 1008,
  kImage = 1022,
  kWaveform = 1026,
  kNdArray = 1030,
};
constexpr std::size_t kConfigNameBytes = 1024;
constexpr std::size_t kAcqHeaderBytes = 340;
constexpr std::size_t kImageHeaderBytes = 198;
constexpr std::size_t kWaveformHeaderBytes = 40;

// What a reader accepts; every declared length is checked against these before a byte is allocated.
struct Limits {
  std::size_t max_text_bytes = std::size_t(4) << 20;  // config text, XML header, text, query
  int max_samples = 16384;
  int max_channels = 1024;
  int max_traj_dims = 3;
  std::size_t max_body_bytes = std::size_t(1) << 30;  // an image, waveform or NDArray (read or skipped)
  bool keep_images = false;                           // 1022: keep (a client) or skip (a server)
};

// Why a stream of messages cannot go on: the session (or the file) ends here with this reason.
enum class Fault { UnknownId, TooLong, Truncated, Compressed, BadField, Timeout, Io };
const char* to_string(Fault f);

class ProtocolError : public std::runtime_error {
 public:
  ProtocolError(Fault f, const std::string& what) : std::runtime_error(what), fault_(f) {}
  Fault fault() const { return fault_; }

 private:
  Fault fault_;
};

// Where the bytes come from (a socket with deadlines, a file, memory). read_some returns 1..n bytes, or 0 at
// the end of the stream; it throws ProtocolError (Timeout, Io) when it cannot. begin_message() is called
// before each message's first byte, so that a source can time a message as a whole (a client that sends one
// byte a second is dropped by a per-message deadline, not only by a per-read one).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::size_t read_some(std::byte* p, std::size_t n) = 0;
  virtual void begin_message() {}
};

// A source over bytes in memory (tests, the fuzzer, a file read whole).
class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::span<const std::byte> b, std::size_t piece = 0) : b_(b), piece_(piece) {}
  std::size_t read_some(std::byte* p, std::size_t n) override;
  std::size_t offset() const { return off_; }

 private:
  std::span<const std::byte> b_;
  std::size_t piece_;  // >0: at most this many bytes per read (fragmentation)
  std::size_t off_ = 0;
};

struct Acquisition {
  std::array<std::byte, kAcqHeaderBytes> head{};  // verbatim
  int samples = 0, channels = 0, traj_dims = 0;
  std::uint64_t flags = 0;
  std::vector<float> traj;   // [samples][traj_dims]
  std::vector<cfloat> data;  // [channels][samples]
};

struct Image {
  std::array<std::byte, kImageHeaderBytes> head{};  // verbatim
  std::string attributes;
  std::vector<std::byte> pixels;
};

struct Message {
  std::uint16_t id = 0;
  std::string text;                  // 1, 2, 3, 5, 6, 7 (a trailing NUL stripped; 1: up to the first NUL)
  std::uint64_t correlation_id = 0;  // 6, 7
  Acquisition acq;                   // 1008
  Image image;                       // 1022 with keep_images
  std::size_t body_bytes = 0;        // the message's size after its id
};

// The next message, or nothing when the source ends cleanly before a message's first byte. Throws
// ProtocolError for an unknown id, a length over the limits (nothing allocated), a source that ends inside a
// message, an acquisition with ISMRMRD's compression flags (53-56), or a field no reader could use.
std::optional<Message> read_message(ByteSource& src, const Limits& limits);

// ---- writing: each appends one whole message to `out`
// -------------------------------------------------------
void append_config_name(std::vector<std::byte>& out, const std::string& name);
// 2, 3, 5: uint32 length + text + a NUL (counted in the length, as python-ismrmrd-server sends it).
void append_text(std::vector<std::byte>& out, std::uint16_t id, const std::string& text);
void append_close(std::vector<std::byte>& out);
void append_query(std::vector<std::byte>& out, std::uint64_t correlation_id, const std::string& query);
void append_response(std::vector<std::byte>& out, std::uint64_t correlation_id, const std::string& text);
// The frames a radstream server's session summary text says were due ("... summary: 128 spokes, 7 frames due,
// 7 made, 7 sent"); -1 when the text is no such summary.
long long frames_due_in_summary(const std::string& text);
// Sizes from the header bytes (number_of_samples, active_channels, trajectory_dimensions); throws
// std::invalid_argument when the spans disagree with them.
void append_acquisition(std::vector<std::byte>& out, std::span<const std::byte> head,
                        std::span<const float> traj, std::span<const cfloat> data);
// The header's attribute_string_len is set to the attributes' length (without a NUL: the length says).
void append_image(std::vector<std::byte>& out, std::span<const std::byte> head, const std::string& attributes,
                  std::span<const std::byte> pixels);

// The same with the pixels left for the caller to write in place: the last `pixel_bytes` of `out` (zeroed).
void append_image(std::vector<std::byte>& out, std::span<const std::byte> head, const std::string& attributes,
                  std::size_t pixel_bytes);

// Bytes per element of an ISMRMRD data type (1 ushort .. 8 complex double); 0 when unknown.
std::size_t data_type_bytes(std::uint16_t data_type);

}  // namespace radstream::mrd
