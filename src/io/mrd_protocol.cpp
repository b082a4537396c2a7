#include "io/mrd_protocol.hpp"

#include <fmt/format.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/waveform.h>

#include <algorithm>
#include <cstring>

namespace radstream::mrd {

static_assert(sizeof(ISMRMRD::ISMRMRD_AcquisitionHeader) == kAcqHeaderBytes);
static_assert(sizeof(ISMRMRD::ISMRMRD_ImageHeader) == kImageHeaderBytes);
static_assert(sizeof(ISMRMRD::ISMRMRD_WaveformHeader) == kWaveformHeaderBytes);

const char* to_string(Fault f) {
  switch (f) {
    case Fault::UnknownId:
      return "unknown_id";
    case Fault::TooLong:
      return "too_long";
    case Fault::Truncated:
      return "truncated";
    case Fault::Compressed:
      return "compressed";
    case Fault::BadField:
      return "bad_field";
    case Fault::Timeout:
      return "timeout";
    case Fault::Io:
      return "io";
  }
  return "?";
}

std::size_t MemorySource::read_some(std::byte* p, std::size_t n) {
  std::size_t k = std::min(n, b_.size() - off_);
  if (piece_ > 0) k = std::min(k, piece_);
  if (k) std::memcpy(p, b_.data() + off_, k);
  off_ += k;
  return k;
}

namespace {

// Exactly n bytes, or ProtocolError(Truncated) when the source ends first.
void read_exact(ByteSource& s, void* dst, std::size_t n, const char* what) {
  auto* p = static_cast<std::byte*>(dst);
  std::size_t got = 0;
  while (got < n) {
    const std::size_t k = s.read_some(p + got, n - got);
    if (k == 0)
      throw ProtocolError(Fault::Truncated,
                          fmt::format("the stream ended inside {} ({} of {} bytes)", what, got, n));
    got += k;
  }
}

// Reads `count` values into v, growing it a piece at a time as the bytes arrive: a declared length alone
// (a 342-byte header promising 65535 samples x 1024 channels) allocates nothing that the sender has not
// sent, and a sender that stops halfway costs only what it sent.
template <class Container>
void read_growing(ByteSource& s, Container& v, std::size_t count, const char* what) {
  using T = typename Container::value_type;
  constexpr std::size_t kPiece = (std::size_t(1) << 20) / sizeof(T);  // 1 MiB
  v.clear();
  while (v.size() < count) {
    const std::size_t old = v.size(), n = std::min(kPiece, count - old);
    v.resize(old + n);
    auto* p = reinterpret_cast<std::byte*>(v.data() + old);
    std::size_t got = 0;
    while (got < n * sizeof(T)) {
      const std::size_t k = s.read_some(p + got, n * sizeof(T) - got);
      if (k == 0)
        throw ProtocolError(Fault::Truncated, fmt::format("the stream ended inside {} ({} of {} bytes)", what,
                                                          old * sizeof(T) + got, count * sizeof(T)));
      got += k;
    }
  }
}

// Reads and drops n bytes in pieces (nothing of the declared size is allocated).
void skip_exact(ByteSource& s, std::uint64_t n, const char* what) {
  std::array<std::byte, 65536> scratch;
  while (n > 0) {
    const std::size_t k = std::size_t(std::min<std::uint64_t>(n, scratch.size()));
    read_exact(s, scratch.data(), k, what);
    n -= k;
  }
}

template <class T>
T read_le(ByteSource& s, const char* what) {
  T v;
  read_exact(s, &v, sizeof v, what);
  return v;  // the hosts radstream runs on are little-endian (checked in CMake)
}

std::string strip_nul(std::string t) {
  while (!t.empty() && t.back() == '\0') t.pop_back();
  return t;
}

std::string read_text_body(ByteSource& s, std::uint64_t n, const Limits& lim, const char* what) {
  if (n > lim.max_text_bytes)
    throw ProtocolError(Fault::TooLong, fmt::format("{} declares {} bytes, more than the limit of {}", what,
                                                    n, lim.max_text_bytes));
  std::string t;
  read_growing(s, t, std::size_t(n), what);
  return strip_nul(std::move(t));
}

void read_acquisition(ByteSource& s, const Limits& lim, Message& m) {
  Acquisition& a = m.acq;
  read_exact(s, a.head.data(), a.head.size(), "an acquisition header");
  ISMRMRD::ISMRMRD_AcquisitionHeader h;
  std::memcpy(&h, a.head.data(), sizeof h);
  a.flags = h.flags;
  for (int bit = ISMRMRD::ISMRMRD_ACQ_COMPRESSION1; bit <= ISMRMRD::ISMRMRD_ACQ_COMPRESSION4; ++bit)
    if (h.flags & (std::uint64_t(1) << (bit - 1)))
      throw ProtocolError(
          Fault::Compressed,
          fmt::format("acquisition {} carries ISMRMRD compression flag {} (ACQ_COMPRESSION{}): "
                      "compressed data is not supported; send it uncompressed",
                      h.scan_counter, bit, bit - ISMRMRD::ISMRMRD_ACQ_COMPRESSION1 + 1));
  if (h.number_of_samples == 0 || h.number_of_samples > lim.max_samples)
    throw ProtocolError(Fault::TooLong, fmt::format("acquisition {} has number_of_samples {} (allowed 1..{})",
                                                    h.scan_counter, h.number_of_samples, lim.max_samples));
  if (h.active_channels == 0 || h.active_channels > lim.max_channels)
    throw ProtocolError(Fault::TooLong, fmt::format("acquisition {} has active_channels {} (allowed 1..{})",
                                                    h.scan_counter, h.active_channels, lim.max_channels));
  if (h.trajectory_dimensions > lim.max_traj_dims)
    throw ProtocolError(Fault::TooLong,
                        fmt::format("acquisition {} has trajectory_dimensions {} (allowed 0..{})",
                                    h.scan_counter, h.trajectory_dimensions, lim.max_traj_dims));
  a.samples = h.number_of_samples;
  a.channels = h.active_channels;
  a.traj_dims = h.trajectory_dimensions;
  read_growing(s, a.traj, std::size_t(a.samples) * std::size_t(a.traj_dims), "an acquisition's trajectory");
  read_growing(s, a.data, std::size_t(a.samples) * std::size_t(a.channels), "an acquisition's data");
  m.body_bytes = kAcqHeaderBytes + a.traj.size() * sizeof(float) + a.data.size() * sizeof(cfloat);
}

void read_image(ByteSource& s, const Limits& lim, Message& m) {
  Image& im = m.image;
  read_exact(s, im.head.data(), im.head.size(), "an image header");
  ISMRMRD::ISMRMRD_ImageHeader h;
  std::memcpy(&h, im.head.data(), sizeof h);
  const auto attr_len = read_le<std::uint64_t>(s, "an image's attribute length");
  const std::size_t elem = data_type_bytes(h.data_type);
  if (elem == 0)
    throw ProtocolError(Fault::BadField, fmt::format("image data_type {} is unknown", h.data_type));
  const std::uint64_t pixels = std::uint64_t(h.matrix_size[0]) * h.matrix_size[1] * h.matrix_size[2] *
                               std::max<std::uint16_t>(h.channels, 1);
  const std::uint64_t body = attr_len + pixels * elem;
  if (attr_len > lim.max_text_bytes || body > lim.max_body_bytes)
    throw ProtocolError(
        Fault::TooLong,
        fmt::format("image of {}x{}x{} x {} channels with {} attribute bytes: {} bytes, more than "
                    "the limit of {}",
                    h.matrix_size[0], h.matrix_size[1], h.matrix_size[2], h.channels, attr_len, body,
                    lim.max_body_bytes));
  m.body_bytes = kImageHeaderBytes + 8 + std::size_t(body);
  if (!lim.keep_images) {
    skip_exact(s, body, "an image");
    return;
  }
  im.attributes.assign(std::size_t(attr_len), '\0');
  read_exact(s, im.attributes.data(), im.attributes.size(), "an image's attributes");
  im.attributes = strip_nul(std::move(im.attributes));
  im.pixels.resize(std::size_t(pixels * elem));
  read_exact(s, im.pixels.data(), im.pixels.size(), "an image's pixels");
}

void read_waveform(ByteSource& s, const Limits& lim, Message& m) {
  ISMRMRD::ISMRMRD_WaveformHeader h;
  read_exact(s, &h, sizeof h, "a waveform header");
  const std::uint64_t body = std::uint64_t(h.number_of_samples) * h.channels * 4;
  if (body > lim.max_body_bytes)
    throw ProtocolError(Fault::TooLong,
                        fmt::format("waveform of {} samples x {} channels: {} bytes, over {}",
                                    h.number_of_samples, h.channels, body, lim.max_body_bytes));
  skip_exact(s, body, "a waveform");
  m.body_bytes = kWaveformHeaderBytes + std::size_t(body);
}

void read_ndarray(ByteSource& s, const Limits& lim, Message& m) {
  read_le<std::uint16_t>(s, "an NDArray's version");
  const auto type = read_le<std::uint16_t>(s, "an NDArray's data type");
  const auto ndim = read_le<std::uint16_t>(s, "an NDArray's dimension count");
  const std::size_t elem = data_type_bytes(type);
  if (elem == 0) throw ProtocolError(Fault::BadField, fmt::format("NDArray data type {} is unknown", type));
  if (ndim > 7)
    throw ProtocolError(Fault::BadField, fmt::format("NDArray of {} dimensions (at most 7)", ndim));
  std::uint64_t count = 1;
  for (int d = 0; d < ndim; ++d) {
    const auto n = read_le<std::uint64_t>(s, "an NDArray's dimensions");
    if (n != 0 && count > lim.max_body_bytes / n)
      throw ProtocolError(Fault::TooLong, "NDArray dimensions beyond the size limit");
    count *= n;
  }
  if (count > lim.max_body_bytes / elem)
    throw ProtocolError(Fault::TooLong,
                        fmt::format("NDArray of {} elements of {} bytes, over the limit of {}", count, elem,
                                    lim.max_body_bytes));
  skip_exact(s, count * elem, "an NDArray");
  m.body_bytes = 6 + 8 * std::size_t(ndim) + std::size_t(count * elem);
}

template <class T>
void put(std::vector<std::byte>& out, T v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}
void put_bytes(std::vector<std::byte>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n);
}

}  // namespace

std::size_t data_type_bytes(std::uint16_t t) {
  switch (t) {
    case ISMRMRD::ISMRMRD_USHORT:
    case ISMRMRD::ISMRMRD_SHORT:
      return 2;
    case ISMRMRD::ISMRMRD_UINT:
    case ISMRMRD::ISMRMRD_INT:
    case ISMRMRD::ISMRMRD_FLOAT:
      return 4;
    case ISMRMRD::ISMRMRD_DOUBLE:
    case ISMRMRD::ISMRMRD_CXFLOAT:
      return 8;
    case ISMRMRD::ISMRMRD_CXDOUBLE:
      return 16;
    default:
      return 0;
  }
}

std::optional<Message> read_message(ByteSource& src, const Limits& lim) {
  src.begin_message();
  std::array<std::byte, 2> idb;
  const std::size_t first = src.read_some(idb.data(), 2);
  if (first == 0) return std::nullopt;  // a clean end between messages
  if (first == 1) read_exact(src, idb.data() + 1, 1, "a message id");
  Message m;
  std::memcpy(&m.id, idb.data(), 2);
  switch (m.id) {
    case kConfigFile: {
      std::string name(kConfigNameBytes, '\0');
      read_exact(src, name.data(), name.size(), "a config name");
      name.resize(std::strlen(name.c_str()));
      m.text = std::move(name);
      m.body_bytes = kConfigNameBytes;
      break;
    }
    case kConfigText:
    case kHeader:
    case kText: {
      const auto n = read_le<std::uint32_t>(src, "a text length");
      m.text = read_text_body(
          src, n, lim, m.id == kHeader ? "the XML header" : (m.id == kText ? "a text" : "a config text"));
      m.body_bytes = 4 + n;
      break;
    }
    case kClose:
      break;
    case kQuery: {
      read_le<std::uint64_t>(src, "a query");
      m.correlation_id = read_le<std::uint64_t>(src, "a query's correlation id");
      const auto n = read_le<std::uint64_t>(src, "a query's length");
      m.text = read_text_body(src, n, lim, "a query");
      m.body_bytes = 24 + std::size_t(n);
      break;
    }
    case kResponse: {
      m.correlation_id = read_le<std::uint64_t>(src, "a response's correlation id");
      const auto n = read_le<std::uint64_t>(src, "a response's length");
      m.text = read_text_body(src, n, lim, "a response");
      m.body_bytes = 16 + std::size_t(n);
      break;
    }
    case kAcquisition:
      read_acquisition(src, lim, m);
      break;
    case kImage:
      read_image(src, lim, m);
      break;
    case kWaveform:
      read_waveform(src, lim, m);
      break;
    case kNdArray:
      read_ndarray(src, lim, m);
      break;
    default:
      throw ProtocolError(Fault::UnknownId,
                          fmt::format("unknown MRD message id {}: the stream cannot be re-synchronised (MRD "
                                      "messages carry no length), so it ends here",
                                      m.id));
  }
  return m;
}

void append_config_name(std::vector<std::byte>& out, const std::string& name) {
  put<std::uint16_t>(out, kConfigFile);
  std::array<char, kConfigNameBytes> b{};
  std::memcpy(b.data(), name.data(), std::min(name.size(), kConfigNameBytes - 1));
  put_bytes(out, b.data(), b.size());
}

void append_text(std::vector<std::byte>& out, std::uint16_t id, const std::string& text) {
  put<std::uint16_t>(out, id);
  put<std::uint32_t>(out, std::uint32_t(text.size() + 1));
  put_bytes(out, text.data(), text.size());
  put<char>(out, '\0');
}

void append_close(std::vector<std::byte>& out) {
  put<std::uint16_t>(out, kClose);
}

void append_query(std::vector<std::byte>& out, std::uint64_t correlation_id, const std::string& q) {
  put<std::uint16_t>(out, kQuery);
  put<std::uint64_t>(out, 0);
  put<std::uint64_t>(out, correlation_id);
  put<std::uint64_t>(out, q.size());
  put_bytes(out, q.data(), q.size());
}

long long frames_due_in_summary(const std::string& text) {
  const auto at = text.find(" frames due");
  if (text.find("summary:") == std::string::npos || at == std::string::npos || at == 0) return -1;
  const auto from = text.rfind(' ', at - 1);
  try {
    return std::stoll(text.substr(from + 1, at - from - 1));
  } catch (const std::exception&) {
    return -1;
  }
}

void append_response(std::vector<std::byte>& out, std::uint64_t correlation_id, const std::string& text) {
  put<std::uint16_t>(out, kResponse);
  put<std::uint64_t>(out, correlation_id);
  put<std::uint64_t>(out, text.size());
  put_bytes(out, text.data(), text.size());
}

void append_acquisition(std::vector<std::byte>& out, std::span<const std::byte> head,
                        std::span<const float> traj, std::span<const cfloat> data) {
  if (head.size() != kAcqHeaderBytes) throw std::invalid_argument("an acquisition header is 340 bytes");
  ISMRMRD::ISMRMRD_AcquisitionHeader h;
  std::memcpy(&h, head.data(), sizeof h);
  if (traj.size() != std::size_t(h.number_of_samples) * h.trajectory_dimensions ||
      data.size() != std::size_t(h.number_of_samples) * h.active_channels)
    throw std::invalid_argument(fmt::format(
        "acquisition of {} samples x {} channels x {} trajectory dimensions "
        "given {} trajectory floats and {} samples",
        h.number_of_samples, h.active_channels, h.trajectory_dimensions, traj.size(), data.size()));
  put<std::uint16_t>(out, kAcquisition);
  put_bytes(out, head.data(), head.size());
  put_bytes(out, traj.data(), traj.size_bytes());
  put_bytes(out, data.data(), data.size_bytes());
}

void append_image(std::vector<std::byte>& out, std::span<const std::byte> head, const std::string& attributes,
                  std::size_t pixel_bytes) {
  if (head.size() != kImageHeaderBytes) throw std::invalid_argument("an image header is 198 bytes");
  ISMRMRD::ISMRMRD_ImageHeader h;
  std::memcpy(&h, head.data(), sizeof h);
  h.attribute_string_len = std::uint32_t(attributes.size());
  out.reserve(out.size() + 2 + sizeof h + 8 + attributes.size() + pixel_bytes);
  put<std::uint16_t>(out, kImage);
  put_bytes(out, &h, sizeof h);
  put<std::uint64_t>(out, attributes.size());
  put_bytes(out, attributes.data(), attributes.size());
  out.resize(out.size() + pixel_bytes);
}

void append_image(std::vector<std::byte>& out, std::span<const std::byte> head, const std::string& attributes,
                  std::span<const std::byte> pixels) {
  if (head.size() != kImageHeaderBytes) throw std::invalid_argument("an image header is 198 bytes");
  ISMRMRD::ISMRMRD_ImageHeader h;
  std::memcpy(&h, head.data(), sizeof h);
  h.attribute_string_len = std::uint32_t(attributes.size());
  put<std::uint16_t>(out, kImage);
  put_bytes(out, &h, sizeof h);
  put<std::uint64_t>(out, attributes.size());
  put_bytes(out, attributes.data(), attributes.size());
  put_bytes(out, pixels.data(), pixels.size());
}

}  // namespace radstream::mrd
