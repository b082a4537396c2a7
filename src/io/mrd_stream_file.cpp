#include "io/mrd_stream_file.hpp"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/input_file.hpp"
#include "io/mrd_protocol.hpp"

namespace radstream {

namespace {

// The codec's byte source over a FILE*, counting the offset.
class FileSource : public mrd::ByteSource {
 public:
  explicit FileSource(std::FILE* f) : f_(f) {}
  std::size_t read_some(std::byte* p, std::size_t n) override {
    const std::size_t k = std::fread(p, 1, n, f_);
    if (k == 0 && std::ferror(f_)) throw mrd::ProtocolError(mrd::Fault::Io, std::strerror(errno));
    off_ += k;
    return k;
  }
  std::uint64_t offset() const { return off_; }

 private:
  std::FILE* f_;
  std::uint64_t off_ = 0;
};

mrd::Limits file_limits() {
  mrd::Limits lim;
  lim.max_samples = 65535;
  lim.max_channels = 1024;
  lim.max_text_bytes = std::size_t(64) << 20;
  return lim;
}

}  // namespace

MrdFileKind sniff_mrd_file(const std::string& path) {
  check_input_file(path, "MRD file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw IoError(fmt::format("{}: cannot open the file", path));
  std::array<unsigned char, 8> b{};
  const std::size_t n = std::fread(b.data(), 1, b.size(), f);
  std::fclose(f);
  static constexpr unsigned char hdf5[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (n == 8 && std::memcmp(b.data(), hdf5, 8) == 0) return MrdFileKind::Hdf5;
  if (n >= 5 && std::memcmp(b.data(), "yardl", 5) == 0) return MrdFileKind::Mrd2;
  if (n >= 2) {
    const unsigned id = unsigned(b[0]) | (unsigned(b[1]) << 8);
    if (id == mrd::kConfigFile || id == mrd::kConfigText || id == mrd::kHeader || id == mrd::kText)
      return MrdFileKind::Stream;
  }
  throw IoError(
      fmt::format("{}: not an HDF5 (MRD) file, nor an MRD stream file (its first bytes are neither the "
                  "HDF5 signature nor an MRD config, header or text message)",
                  path));
}

MrdStreamReader::MrdStreamReader(const std::string& path) : path_(path) {
  check_input_file(path, "MRD stream file");
  f_ = std::fopen(path.c_str(), "rb");
  if (!f_) throw IoError(fmt::format("{}: cannot open the file: {}", path, std::strerror(errno)));
  FileSource src(f_);
  const mrd::Limits lim = file_limits();
  bool header = false;
  for (;;) {
    const std::uint64_t at = src.offset();
    std::optional<mrd::Message> m;
    try {
      m = mrd::read_message(src, lim);
    } catch (const mrd::ProtocolError& e) {
      if (e.fault() == mrd::Fault::Truncated && header && !offsets_.empty()) {
        log::warn(
            "{}: the file ends inside a message at byte {} after {} acquisitions (a recording cut "
            "short?); those are read",
            path, at, offsets_.size());
        break;
      }
      std::fclose(f_);
      f_ = nullptr;
      if (e.fault() == mrd::Fault::Truncated && header)  // cut inside its first acquisition: nothing to read
        throw IoError(
            fmt::format("{}: the file ends inside its first acquisition (at byte {}): no complete "
                        "acquisition; {}",
                        path, at, e.what()));
      throw IoError(fmt::format("{}: at byte {}: {}", path, at, e.what()));
    }
    if (!m || m->id == mrd::kClose) break;
    if (m->id == mrd::kHeader) {
      if (!header) xml_ = m->text;
      header = true;
    } else if (m->id == mrd::kAcquisition) {
      if (!header) {
        std::fclose(f_);
        f_ = nullptr;
        throw IoError(fmt::format("{}: an acquisition at byte {} comes before the XML header", path, at));
      }
      offsets_.push_back(at);
    } else {
      ++skipped_;
    }
  }
  if (!header) {
    std::fclose(f_);
    f_ = nullptr;
    throw IoError(fmt::format("{}: an MRD stream file without an XML header (message 3)", path));
  }
}

MrdStreamReader::~MrdStreamReader() {
  if (f_) std::fclose(f_);
}

RawSpoke MrdStreamReader::read(std::size_t i) {
  if (i >= offsets_.size())
    throw IoError(fmt::format("{}: acquisition {} is outside 0..{}", path_, i, offsets_.size()));
  if (std::fseek(f_, long(offsets_[i]), SEEK_SET) != 0)
    throw IoError(fmt::format("{}: cannot seek to acquisition {}", path_, i));
  FileSource src(f_);
  try {
    auto m = mrd::read_message(src, file_limits());
    if (!m || m->id != mrd::kAcquisition) throw IoError(fmt::format("{}: acquisition {} moved", path_, i));
    RawSpoke r;
    r.acq_header = m->acq.head;
    r.traj = std::move(m->acq.traj);
    r.data = std::move(m->acq.data);
    return r;
  } catch (const mrd::ProtocolError& e) {
    throw IoError(fmt::format("{}: acquisition {}: {}", path_, i, e.what()));
  }
}

MrdStreamWriter::MrdStreamWriter(const std::string& path, const std::string& xml) : path_(path) {
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_)
    throw IoError(fmt::format("{}: cannot create the MRD stream file: {}", path, std::strerror(errno)));
  mrd::append_text(buf_, mrd::kHeader, xml);
  flush();  // the header alone is already a readable file
}

MrdStreamWriter::~MrdStreamWriter() {
  if (!f_) return;
  if (!abandoned_) {  // the acquisitions still buffered, then the close
    mrd::append_close(buf_);
    try {
      flush();
    } catch (const std::exception& e) {
      log::error("{}", e.what());
    }
  }
  std::fclose(f_);
}

void MrdStreamWriter::append(std::span<const std::byte> acq_header, std::span<const float> traj,
                             std::span<const cfloat> data) {
  try {
    mrd::append_acquisition(buf_, acq_header, traj, data);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("{}: {}", path_, e.what()));
  }
  ++count_;
  if (buf_.size() >= (std::size_t(1) << 20)) flush();
}

void MrdStreamWriter::flush() {
  if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size())
    throw IoError(
        fmt::format("{}: cannot write to the disk after {} acquisitions (disk full?)", path_, count_));
  buf_.clear();
  if (std::fflush(f_) != 0)
    throw IoError(
        fmt::format("{}: cannot write to the disk after {} acquisitions (disk full?)", path_, count_));
}

}  // namespace radstream
