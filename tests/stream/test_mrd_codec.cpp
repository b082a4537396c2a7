// The MRD streaming codec (io/mrd_protocol.hpp) on bytes built here from ISMRMRD's structs, not by the
// codec: every message id, fragmentation down to one byte per read, the faults that end a stream (unknown id,
// lengths over the limits before any allocation, compression, truncation), and a fuzz of the framing.
#include <gtest/gtest.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/waveform.h>

#include <cstring>
#include <random>

#include "io/mrd_protocol.hpp"

using namespace radstream;

namespace {

// Little-endian bytes, written by hand from the protocol's description.
struct Bytes {
  std::vector<std::byte> b;
  template <class T>
  Bytes& put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    b.insert(b.end(), p, p + sizeof v);
    return *this;
  }
  Bytes& raw(const void* p, std::size_t n) {
    const auto* q = static_cast<const std::byte*>(p);
    b.insert(b.end(), q, q + n);
    return *this;
  }
  Bytes& text(std::uint16_t id, const std::string& t, bool nul) {
    put<std::uint16_t>(id)
        .put<std::uint32_t>(std::uint32_t(t.size() + (nul ? 1 : 0)))
        .raw(t.data(), t.size());
    if (nul) put<char>('\0');
    return *this;
  }
};

ISMRMRD::ISMRMRD_AcquisitionHeader acq_header(int samples, int channels, int dims, std::uint32_t counter) {
  ISMRMRD::ISMRMRD_AcquisitionHeader h;
  ISMRMRD::ismrmrd_init_acquisition_header(&h);
  h.number_of_samples = std::uint16_t(samples);
  h.active_channels = std::uint16_t(channels);
  h.available_channels = std::uint16_t(channels);
  h.trajectory_dimensions = std::uint16_t(dims);
  h.scan_counter = counter;
  return h;
}

Bytes& acquisition(Bytes& out, const ISMRMRD::ISMRMRD_AcquisitionHeader& h, float base) {
  out.put<std::uint16_t>(1008).raw(&h, sizeof h);
  for (int i = 0; i < h.number_of_samples * h.trajectory_dimensions; ++i) out.put<float>(base + float(i));
  for (int i = 0; i < h.number_of_samples * h.active_channels; ++i)
    out.put<float>(base - float(i)).put<float>(float(i) * 0.5f);
  return out;
}

// One stream with every message kind.
Bytes every_kind() {
  Bytes s;
  std::array<char, 1024> name{};
  std::strcpy(name.data(), "gridding");
  s.put<std::uint16_t>(1).raw(name.data(), name.size());
  s.text(2, "recon:\n  method: fbp\n", true);
  s.text(3, "<ismrmrdHeader/>", true);
  s.text(5, "{\"parameters\": {\"config\": \"nlinv\"}}", false);
  s.put<std::uint16_t>(6).put<std::uint64_t>(0).put<std::uint64_t>(77).put<std::uint64_t>(16).raw(
      "ismrmrd::version", 16);
  s.put<std::uint16_t>(7).put<std::uint64_t>(77).put<std::uint64_t>(5).raw("1.8.0", 5);
  acquisition(s, acq_header(8, 2, 2, 1), 1.f);
  acquisition(s, acq_header(5, 3, 0, 2), 9.f);
  ISMRMRD::ISMRMRD_WaveformHeader w{};
  w.version = 1;
  w.number_of_samples = 7;
  w.channels = 3;
  s.put<std::uint16_t>(1026).raw(&w, sizeof w);
  for (int i = 0; i < 21; ++i) s.put<std::uint32_t>(std::uint32_t(i));
  ISMRMRD::ISMRMRD_ImageHeader ih;
  ISMRMRD::ismrmrd_init_image_header(&ih);
  ih.data_type = ISMRMRD::ISMRMRD_FLOAT;
  ih.matrix_size[0] = 4;
  ih.matrix_size[1] = 3;
  ih.matrix_size[2] = 1;
  ih.channels = 1;
  const std::string attrs = "<ismrmrdMeta/>";
  ih.attribute_string_len = std::uint32_t(attrs.size());
  s.put<std::uint16_t>(1022)
      .raw(&ih, sizeof ih)
      .put<std::uint64_t>(attrs.size())
      .raw(attrs.data(), attrs.size());
  for (int i = 0; i < 12; ++i) s.put<float>(float(i));
  s.put<std::uint16_t>(1030)
      .put<std::uint16_t>(1)
      .put<std::uint16_t>(ISMRMRD::ISMRMRD_CXFLOAT)
      .put<std::uint16_t>(2);
  s.put<std::uint64_t>(3).put<std::uint64_t>(2);
  for (int i = 0; i < 12; ++i) s.put<float>(float(i));
  s.put<std::uint16_t>(4);
  return s;
}

std::vector<mrd::Message> read_all(std::span<const std::byte> b, std::size_t piece, mrd::Limits lim = {}) {
  mrd::MemorySource src(b, piece);
  std::vector<mrd::Message> out;
  while (auto m = mrd::read_message(src, lim)) out.push_back(std::move(*m));
  return out;
}

mrd::Fault fault_of(std::span<const std::byte> b, mrd::Limits lim = {}) {
  try {
    read_all(b, 0, lim);
  } catch (const mrd::ProtocolError& e) {
    return e.fault();
  }
  ADD_FAILURE() << "no fault";
  return mrd::Fault::Io;
}

}  // namespace

TEST(MrdCodec, EveryMessageKindWholeAndInOneBytePieces) {
  const Bytes s = every_kind();
  for (std::size_t piece : {std::size_t(0), std::size_t(1), std::size_t(7)}) {
    mrd::Limits lim;
    lim.keep_images = true;
    const auto m = read_all(s.b, piece, lim);
    ASSERT_EQ(m.size(), 12u) << "piece " << piece;
    EXPECT_EQ(m[11].id, 4);
    EXPECT_EQ(m[0].id, 1);
    EXPECT_EQ(m[0].text, "gridding");
    EXPECT_EQ(m[1].text, "recon:\n  method: fbp\n");  // the trailing NUL stripped
    EXPECT_EQ(m[2].text, "<ismrmrdHeader/>");
    EXPECT_EQ(m[3].text, "{\"parameters\": {\"config\": \"nlinv\"}}");
    EXPECT_EQ(m[4].id, 6);
    EXPECT_EQ(m[4].correlation_id, 77u);
    EXPECT_EQ(m[4].text, "ismrmrd::version");
    EXPECT_EQ(m[5].text, "1.8.0");
    EXPECT_EQ(m[6].acq.samples, 8);
    EXPECT_EQ(m[6].acq.channels, 2);
    ASSERT_EQ(m[6].acq.traj.size(), 16u);
    EXPECT_EQ(m[6].acq.traj[15], 16.f);
    ASSERT_EQ(m[6].acq.data.size(), 16u);
    EXPECT_EQ(m[6].acq.data[3], cfloat(1.f - 3.f, 1.5f));
    EXPECT_EQ(m[7].acq.traj_dims, 0);
    EXPECT_EQ(m[7].acq.data.size(), 15u);
    EXPECT_EQ(m[8].id, 1026);
    EXPECT_EQ(m[8].body_bytes, 40u + 84u);
    EXPECT_EQ(m[9].id, 1022);
    EXPECT_EQ(m[9].image.attributes, "<ismrmrdMeta/>");
    EXPECT_EQ(m[9].image.pixels.size(), 48u);
    EXPECT_EQ(m[10].id, 1030);
    EXPECT_EQ(m[10].body_bytes, 6u + 16u + 48u);
  }
  // A server skips images (nothing kept) and still reads the close after them.
  const auto m = read_all(s.b, 0);
  EXPECT_TRUE(m[9].image.pixels.empty());
}

TEST(MrdCodec, WritersProduceWhatTheHandWrittenBytesSay) {
  std::vector<std::byte> out;
  mrd::append_config_name(out, "gridding");
  mrd::append_text(out, mrd::kConfigText, "recon:\n  method: fbp\n");
  mrd::append_text(out, mrd::kHeader, "<ismrmrdHeader/>");
  mrd::append_query(out, 77, "ismrmrd::version");
  mrd::append_response(out, 77, "1.8.0");
  const auto h = acq_header(8, 2, 2, 1);
  Bytes acq;
  acquisition(acq, h, 1.f);
  std::vector<float> traj(16);
  std::vector<cfloat> data(16);
  std::memcpy(traj.data(), acq.b.data() + 2 + 340, 64);
  std::memcpy(data.data(), acq.b.data() + 2 + 340 + 64, 128);
  mrd::append_acquisition(out, std::as_bytes(std::span(&h, 1)), traj, data);
  mrd::append_close(out);
  Bytes want;
  std::array<char, 1024> name{};
  std::strcpy(name.data(), "gridding");
  want.put<std::uint16_t>(1).raw(name.data(), name.size());
  want.text(2, "recon:\n  method: fbp\n", true);
  want.text(3, "<ismrmrdHeader/>", true);
  want.put<std::uint16_t>(6).put<std::uint64_t>(0).put<std::uint64_t>(77).put<std::uint64_t>(16).raw(
      "ismrmrd::version", 16);
  want.put<std::uint16_t>(7).put<std::uint64_t>(77).put<std::uint64_t>(5).raw("1.8.0", 5);
  want.raw(acq.b.data(), acq.b.size());
  want.put<std::uint16_t>(4);
  EXPECT_EQ(out, want.b);
  EXPECT_THROW(mrd::append_acquisition(out, std::as_bytes(std::span(&h, 1)), traj, std::span(data).first(15)),
               std::invalid_argument);
}

TEST(MrdCodec, FaultsEndTheStreamByName) {
  {  // an unknown id
    Bytes s;
    s.put<std::uint16_t>(999).put<std::uint32_t>(0);
    EXPECT_EQ(fault_of(s.b), mrd::Fault::UnknownId);
  }
  {  // a 4 GB header length: refused before anything of that size is allocated
    Bytes s;
    s.put<std::uint16_t>(3).put<std::uint32_t>(0xffffffffu);
    EXPECT_EQ(fault_of(s.b), mrd::Fault::TooLong);
    Bytes q;
    q.put<std::uint16_t>(6).put<std::uint64_t>(0).put<std::uint64_t>(1).put<std::uint64_t>(~0ull);
    EXPECT_EQ(fault_of(q.b), mrd::Fault::TooLong);
  }
  {  // an acquisition beyond the limits, and one with a compression flag
    Bytes s;
    acquisition(s, acq_header(8, 2, 2, 1), 0.f);
    mrd::Limits lim;
    lim.max_channels = 1;
    EXPECT_EQ(fault_of(s.b, lim), mrd::Fault::TooLong);
    auto h = acq_header(8, 2, 4, 1);
    Bytes d;
    acquisition(d, h, 0.f);
    EXPECT_EQ(fault_of(d.b), mrd::Fault::TooLong);  // 4 trajectory dimensions
    h = acq_header(8, 2, 2, 1);
    h.flags = std::uint64_t(1) << (ISMRMRD::ISMRMRD_ACQ_COMPRESSION2 - 1);
    Bytes c;
    acquisition(c, h, 0.f);
    try {
      read_all(c.b, 0);
      ADD_FAILURE();
    } catch (const mrd::ProtocolError& e) {
      EXPECT_EQ(e.fault(), mrd::Fault::Compressed);
      EXPECT_NE(std::string(e.what()).find("ACQ_COMPRESSION2"), std::string::npos) << e.what();
    }
  }
  {  // an image or NDArray declaring a huge body
    ISMRMRD::ISMRMRD_ImageHeader ih;
    ISMRMRD::ismrmrd_init_image_header(&ih);
    ih.data_type = ISMRMRD::ISMRMRD_CXDOUBLE;
    ih.matrix_size[0] = ih.matrix_size[1] = ih.matrix_size[2] = 65535;
    ih.channels = 65535;
    Bytes s;
    s.put<std::uint16_t>(1022).raw(&ih, sizeof ih).put<std::uint64_t>(0);
    EXPECT_EQ(fault_of(s.b), mrd::Fault::TooLong);
    Bytes n;
    n.put<std::uint16_t>(1030).put<std::uint16_t>(1).put<std::uint16_t>(7).put<std::uint16_t>(3);
    n.put<std::uint64_t>(1ull << 40).put<std::uint64_t>(1ull << 40).put<std::uint64_t>(1ull << 40);
    EXPECT_EQ(fault_of(n.b), mrd::Fault::TooLong);
  }
  {  // the stream ends inside a message; a clean end between messages is no fault
    Bytes s = every_kind();
    s.b.resize(s.b.size() - 5);
    EXPECT_EQ(fault_of(s.b), mrd::Fault::Truncated);
    EXPECT_TRUE(read_all({}, 0).empty());
  }
}

// Random damage to valid streams: every read ends in a message, a clean end or a named fault; never more
// than the limits allocated (the limits are small here, and the process would notice a huge allocation).
TEST(MrdCodec, FuzzedFramingNeverCrashesOrOverreads) {
  const Bytes base = every_kind();
  std::mt19937 rng(20261126);
  mrd::Limits lim;
  lim.max_text_bytes = 1 << 16;
  lim.max_body_bytes = 1 << 20;
  lim.keep_images = true;
  std::size_t messages = 0, faults = 0, streams = 0;
  // 200,000 in CI; RADSTREAM_MRD_FUZZ_MESSAGES=1000000 (scripts/mrd_fuzz.sh) for the long run.
  const char* env = std::getenv("RADSTREAM_MRD_FUZZ_MESSAGES");
  const std::size_t goal = env ? std::size_t(std::atoll(env)) : 200000;
  while (messages < goal) {
    std::vector<std::byte> b = base.b;
    const int edits = 1 + int(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % b.size();
      switch (rng() % 4) {
        case 0:
          b[at] = std::byte(rng());
          break;
        case 1:
          b.resize(at);
          break;
        case 2:
          b.insert(b.begin() + std::ptrdiff_t(at), std::byte(rng()));
          break;
        default:
          if (at + 8 <= b.size()) {
            const std::uint64_t v = (rng() % 2) ? ~0ull : std::uint64_t(rng());
            std::memcpy(b.data() + at, &v, 8);
          }
      }
      if (b.empty()) break;
    }
    mrd::MemorySource src(b, 1 + rng() % 64);
    try {
      while (auto m = mrd::read_message(src, lim)) {
        ++messages;
        EXPECT_LE(m->body_bytes, b.size());
      }
    } catch (const mrd::ProtocolError&) {
      ++faults;
      ++messages;
    }
    EXPECT_LE(src.offset(), b.size());
    ++streams;
  }
  std::printf("fuzz: %zu messages in %zu damaged streams, %zu named faults\n", messages, streams, faults);
  EXPECT_GT(faults, streams / 4);
}
