#include "io/mrd2_file.hpp"

#include <fmt/format.h>
#include <ismrmrd/ismrmrd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/input_file.hpp"
#include "io/mrd2_header.hpp"
#include "io/mrd2_schema.hpp"

namespace radstream {

namespace {

using Head = ISMRMRD::ISMRMRD_AcquisitionHeader;
constexpr char kMagic[5] = {'y', 'a', 'r', 'd', 'l'};
constexpr std::uint32_t kEncodingVersion = 1;
constexpr std::size_t kFlushBytes = std::size_t(4) << 20;  // a block is written at least every 4 MiB

// An optional uint that MRD v1 keeps in 16 bits.
std::uint16_t opt_u16(yardl::Input& in, const char* field) {
  const std::uint64_t i = in.varint();
  if (i > 1) in.fail(fmt::format("{}: union case {} of an optional", field, i));
  if (i == 0) return 0;
  const std::uint64_t v = in.varint();
  if (v > 0xffff) in.fail(fmt::format("{} = {} does not fit MRD v1's 16 bits", field, v));
  return std::uint16_t(v);
}

std::uint64_t opt_u64(yardl::Input& in, const char* field) {
  const std::uint64_t i = in.varint();
  if (i > 1) in.fail(fmt::format("{}: union case {} of an optional", field, i));
  return i == 0 ? 0 : in.varint();
}

template <typename T, std::size_t N, typename Read>
void vector_into(yardl::Input& in, T (&out)[N], const char* field, Read read) {
  const std::uint64_t n = in.count(1, field);
  if (n > N) in.fail(fmt::format("{} holds {} values, MRD v1 holds {}", field, n, N));
  for (std::uint64_t k = 0; k < n; ++k) out[k] = read();
}

void put_opt(yardl::Output& out, std::uint64_t v) {
  out.varint(1);
  out.varint(v);
}

void decode_head(yardl::Input& in, Head& h) {
  h.flags = in.varint();
  std::uint16_t* idx[] = {&h.idx.kspace_encode_step_1,
                          &h.idx.kspace_encode_step_2,
                          &h.idx.average,
                          &h.idx.slice,
                          &h.idx.contrast,
                          &h.idx.phase,
                          &h.idx.repetition,
                          &h.idx.set,
                          &h.idx.segment};
  for (std::uint16_t* p : idx) *p = opt_u16(in, "idx");
  vector_into(in, h.idx.user, "idx.user", [&] { return std::uint16_t(in.varint()); });
  h.measurement_uid = std::uint32_t(in.varint());
  h.scan_counter = std::uint32_t(opt_u64(in, "scanCounter"));
  if (opt_u64(in, "acquisitionCenterFrequency") != 0)
    in.fail("acquisitionCenterFrequency is set, and MRD v1 has no field for it");
  h.acquisition_time_stamp = std::uint32_t(opt_u64(in, "acquisitionTimeStampNs") / 1000000);
  vector_into(in, h.physiology_time_stamp, "physiologyTimeStampNs",
              [&] { return std::uint32_t(in.varint() / 1000000); });
  const std::uint64_t channels = in.count(1, "channelOrder");
  for (std::uint64_t k = 0; k < channels; ++k) {
    const std::uint64_t c = in.varint();
    if (c >= 64 * ISMRMRD::ISMRMRD_CHANNEL_MASKS) in.fail(fmt::format("channel {} beyond MRD v1's mask", c));
    h.channel_mask[c / 64] |= std::uint64_t(1) << (c % 64);
  }
  h.discard_pre = opt_u16(in, "discardPre");
  h.discard_post = opt_u16(in, "discardPost");
  h.center_sample = opt_u16(in, "centerSample");
  h.encoding_space_ref = opt_u16(in, "encodingSpaceRef");
  h.sample_time_us = float(double(opt_u64(in, "sampleTimeNs")) / 1e3);
  for (float* v : {h.position, h.read_dir, h.phase_dir, h.slice_dir, h.patient_table_position})
    for (int k = 0; k < 3; ++k) v[k] = in.f32();
  vector_into(in, h.user_int, "userInt", [&] { return std::int32_t(in.svarint()); });
  vector_into(in, h.user_float, "userFloat", [&] { return in.f32(); });
}

void encode_head(const Head& h, yardl::Output& out) {
  out.varint(h.flags);
  for (std::uint16_t v : {h.idx.kspace_encode_step_1, h.idx.kspace_encode_step_2, h.idx.average, h.idx.slice,
                          h.idx.contrast, h.idx.phase, h.idx.repetition, h.idx.set, h.idx.segment})
    put_opt(out, v);
  out.varint(ISMRMRD::ISMRMRD_USER_INTS);
  for (std::uint16_t v : h.idx.user) out.varint(v);
  out.varint(h.measurement_uid);
  put_opt(out, h.scan_counter);
  out.varint(0);  // acquisitionCenterFrequency: MRD v1 has none
  put_opt(out, std::uint64_t(h.acquisition_time_stamp) * 1000000);
  out.varint(ISMRMRD::ISMRMRD_PHYS_STAMPS);
  for (std::uint32_t v : h.physiology_time_stamp) out.varint(std::uint64_t(v) * 1000000);
  std::vector<std::uint32_t> order;
  for (unsigned c = 0; c < 64 * ISMRMRD::ISMRMRD_CHANNEL_MASKS; ++c)
    if (h.channel_mask[c / 64] >> (c % 64) & 1) order.push_back(c);
  out.varint(order.size());
  for (std::uint32_t c : order) out.varint(c);
  for (std::uint16_t v : {h.discard_pre, h.discard_post, h.center_sample, h.encoding_space_ref})
    put_opt(out, v);
  put_opt(out, std::uint64_t(std::llround(double(h.sample_time_us) * 1e3)));
  for (const float* v : {h.position, h.read_dir, h.phase_dir, h.slice_dir, h.patient_table_position})
    for (int k = 0; k < 3; ++k) out.f32(v[k]);
  out.varint(ISMRMRD::ISMRMRD_USER_INTS);
  for (std::int32_t v : h.user_int) out.svarint(v);
  out.varint(ISMRMRD::ISMRMRD_USER_FLOATS);
  for (float v : h.user_float) out.f32(v);
}

}  // namespace

namespace mrd2 {

void write_preamble(yardl::Output& out, const std::string& xml, const std::string& context) {
  out.bytes(kMagic, 5);
  out.bytes(&kEncodingVersion, 4);
  out.string(schema_text());
  if (xml.empty()) return out.varint(0);  // no Header
  out.varint(1);
  schema().write("Mrd.Header", header_from_xml(schema(), xml, context), out);
}

RawSpoke decode_acquisition(yardl::Input& in, bool keep) {
  Head h;
  ISMRMRD::ismrmrd_init_acquisition_header(&h);
  decode_head(in, h);
  const std::uint64_t coils = in.varint(), samples = in.varint();
  if (coils > 0xffff || samples > 0xffff)
    in.fail(fmt::format("an acquisition of {} coils x {} samples does not fit MRD v1's 16-bit counts", coils,
                        samples));
  RawSpoke r;
  in.need(coils * samples * sizeof(cfloat), fmt::format("data of {} coils x {} samples", coils, samples));
  if (keep) {
    r.data.resize(std::size_t(coils * samples));
    in.read(r.data.data(), r.data.size() * sizeof(cfloat));
  } else {
    in.skip(coils * samples * sizeof(cfloat));
  }
  const std::uint64_t phase = in.varint();
  if (phase > 1) in.fail(fmt::format("phase: union case {} of an optional", phase));
  if (phase == 1) in.fail("the acquisition has a phase array, and MRD v1 has no place for it");
  const std::uint64_t basis = in.varint(), tsamples = in.varint();
  if (basis * tsamples > 0 && (tsamples != samples || basis > 0xffff))
    in.fail(fmt::format("a trajectory of {} x {} for {} samples", basis, tsamples, samples));
  in.need(basis * tsamples * sizeof(float), "a trajectory");
  if (!keep) {
    in.skip(basis * tsamples * sizeof(float));
    return r;
  }
  std::vector<float> t(std::size_t(basis * tsamples));
  in.read(t.data(), t.size() * sizeof(float));
  r.traj.resize(t.size());
  for (std::size_t d = 0; d < basis; ++d)  // [basis][samples] -> MRD v1's [samples][basis]
    for (std::size_t s = 0; s < tsamples; ++s) r.traj[s * basis + d] = t[d * tsamples + s];
  h.number_of_samples = std::uint16_t(samples);
  h.available_channels = h.active_channels = std::uint16_t(coils);
  h.trajectory_dimensions = std::uint16_t(t.empty() ? 0 : basis);
  std::memcpy(r.acq_header.data(), &h, sizeof h);
  return r;
}

void encode_acquisition(std::span<const std::byte> acq_header, std::span<const float> traj,
                        std::span<const cfloat> data, yardl::Output& out) {
  Head h;
  if (acq_header.size() != sizeof h) throw InputError("an MRD v1 acquisition header is 340 bytes");
  std::memcpy(&h, acq_header.data(), sizeof h);
  const std::size_t samples = h.number_of_samples, coils = h.active_channels, dims = h.trajectory_dimensions;
  if (data.size() != samples * coils || traj.size() != samples * dims)
    throw InputError(
        fmt::format("an acquisition of {} coils x {} samples x {} trajectory dimensions with {} data "
                    "and {} trajectory values",
                    coils, samples, dims, data.size(), traj.size()));
  encode_head(h, out);
  out.varint(coils);
  out.varint(samples);
  out.bytes(data.data(), data.size_bytes());
  out.varint(0);  // no phase array
  out.varint(dims);
  out.varint(dims ? samples : 0);
  for (std::size_t d = 0; d < dims; ++d)
    for (std::size_t s = 0; s < samples; ++s) out.f32(traj[s * dims + d]);
}

}  // namespace mrd2

// ---- reading --------------------------------------------------------------------------------------------

Mrd2Reader::Mrd2Reader(const std::string& path) : path_(path) {
  check_input_file(path, "MRD 2 file");
  f_ = std::fopen(path.c_str(), "rb");
  if (!f_) throw IoError(fmt::format("{}: cannot open the file: {}", path, std::strerror(errno)));
  try {
    in_ = std::make_unique<yardl::Input>(f_, path);
    char magic[5] = {};
    std::uint32_t version = 0;
    in_->read(magic, 5);
    if (std::memcmp(magic, kMagic, 5) != 0) in_->fail("not an MRD v2 file (no yardl magic)");
    in_->read(&version, 4);
    if (version != kEncodingVersion)
      in_->fail(fmt::format("an MRD v2 file in yardl binary encoding version {}; radstream reads version {}",
                            version, kEncodingVersion));
    const std::string text = in_->string();
    if (text != mrd2::schema_text()) {
      const std::string release = mrd2::schema_release(text);
      if (!release.empty())
        throw IoError(fmt::format(
            "{}: an MRD v2 file of MRD release {}, whose schema is not the 2.2.1 that radstream reads: write "
            "it "
            "again as 2.2.1 (mrd-upgrade, or MRD {}'s mrd_to_ismrmrd and then 2.2.1's ismrmrd_to_mrd)",
            path, release, release));
      throw IoError(
          fmt::format("{}: an MRD v2 (yardl) file whose protocol schema is not MRD 2.2.1's nor that of an "
                      "earlier MRD 2 release (fingerprint {:#018x}, {} bytes)",
                      path, mrd2::fnv1a(text), text.size()));
    }
    const yardl::Schema& s = mrd2::schema();
    const std::uint64_t has_header = in_->varint();
    if (has_header != 1) in_->fail("the MRD v2 file has no Header (radstream needs its encoding)");
    header_ = s.read("Mrd.Header", *in_);
    xml_ = mrd2::header_to_xml(s, header_);
    index(s);
  } catch (...) {
    std::fclose(f_);
    f_ = nullptr;
    throw;
  }
}

void Mrd2Reader::index(const yardl::Schema& s) {
  const nlohmann::json items = s.resolve(s.step_type("data"));
  std::size_t whole = 0;  // acquisitions before the item being read
  try {
    while (!in_->at_end()) {  // a file without the stream's end (a writer killed after a flush) is fine
      whole = offsets_.size();
      const std::uint64_t n = in_->count(1, "stream items");
      if (n == 0) break;
      for (std::uint64_t k = 0; k < n; ++k) {
        whole = offsets_.size();
        const std::uint64_t i = in_->varint();
        if (i >= items.size())
          in_->fail(fmt::format("stream item of union case {} (StreamItem has {})", i, items.size()));
        if (i == 0) {
          offsets_.push_back(in_->offset());
          mrd2::decode_acquisition(*in_, false);  // checked and passed over; read(i) comes back for it
        } else {
          s.skip(items[i]["type"], *in_);
          ++skipped_;
        }
      }
    }
  } catch (const IoError& e) {
    if (!in_->hit_end() || whole == 0) throw;
    // The file ends inside an item: a recording cut short keeps the whole acquisitions before it.
    offsets_.resize(whole);
    log::warn("{}: the file ends inside a stream item after {} acquisitions (cut short?); those are read: {}",
              path_, offsets_.size(), e.what());
  }
}

RawSpoke Mrd2Reader::read(std::size_t i) {
  if (i >= offsets_.size()) throw IoError(fmt::format("{}: acquisition {} of {}", path_, i, offsets_.size()));
  in_->seek(offsets_[i]);
  return mrd2::decode_acquisition(*in_);
}

Mrd2Reader::~Mrd2Reader() {
  if (f_) std::fclose(f_);
}

// ---- writing --------------------------------------------------------------------------------------------

Mrd2Writer::Mrd2Writer(const std::string& path, const std::string& xml) : path_(path) {
  std::vector<std::byte> head;
  yardl::Output out(head);
  mrd2::write_preamble(out, xml, path);
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) throw IoError(fmt::format("{}: cannot create the file: {}", path, std::strerror(errno)));
  if (std::fwrite(head.data(), 1, head.size(), f_) != head.size() || std::fflush(f_) != 0) {
    std::fclose(f_);
    f_ = nullptr;
    throw IoError(fmt::format("{}: cannot write the MRD 2 header: {}", path, std::strerror(errno)));
  }
}

void Mrd2Writer::append(std::span<const std::byte> acq_header, std::span<const float> traj,
                        std::span<const cfloat> data) {
  yardl::Output out(block_);
  out.varint(0);  // StreamItem case 0: Acquisition
  mrd2::encode_acquisition(acq_header, traj, data, out);
  ++in_block_;
  if (block_.size() >= kFlushBytes) flush();
}

void Mrd2Writer::flush() {
  if (!f_ || abandoned_ || in_block_ == 0) return;
  std::vector<std::byte> count;
  yardl::Output(count).varint(in_block_);
  if (std::fwrite(count.data(), 1, count.size(), f_) != count.size() ||
      std::fwrite(block_.data(), 1, block_.size(), f_) != block_.size() || std::fflush(f_) != 0)
    throw IoError(fmt::format("{}: cannot write: {}", path_, std::strerror(errno)));
  block_.clear();
  in_block_ = 0;
}

Mrd2Writer::~Mrd2Writer() {
  if (!f_) return;
  if (!abandoned_) {
    try {
      flush();
      const unsigned char end = 0;  // the stream's last block: length 0
      if (std::fwrite(&end, 1, 1, f_) != 1 || std::fflush(f_) != 0)
        log::error("{}: cannot write the end of the MRD 2 stream: {}", path_, std::strerror(errno));
    } catch (const std::exception& e) {
      log::error("{}", e.what());
    }
  }
  std::fclose(f_);
}

}  // namespace radstream
