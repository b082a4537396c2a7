// A client of the MRD protocol written from its description (raw bytes and ISMRMRD's structs, not radstream's
// codec), shared by the MRD server tests: what it sends is put, then flushed in fragments of any size; what
// the server sends back is read until its close.
#pragma once
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/meta.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "io/mrd_file.hpp"
#include "sim/simulator.hpp"
#include "stream/run_config.hpp"
#include "stream/stream_test_util.hpp"

namespace radstream::mrdtest {

using streamtest::small_config;

struct ImageBack {
  ISMRMRD::ISMRMRD_ImageHeader head;
  std::string attributes;
  std::vector<std::byte> pixels;
  double meta(const char* name) const {
    ISMRMRD::MetaContainer m;
    ISMRMRD::deserialize(attributes.c_str(), m);
    return m.as_double(name);
  }
};

struct Replies {
  std::vector<ImageBack> images;
  std::vector<std::string> texts;
  bool closed = false;  // an MRD close (4) came
};

// A client of the protocol as its description says it: id, then the body with its own sizes.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(std::uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  // The messages of a file or pipe (what `run --mrd-stdin` wrote), read as a server's replies (owns fd).
  struct FromFd {
    int fd;
  };
  explicit RawClient(FromFd f) : fd_(f.fd), ok_(f.fd >= 0) {}
  ~RawClient() { close(); }
  bool ok() const { return ok_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  template <class T>
  void put(T v) {
    raw(&v, sizeof v);
  }
  void raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void config_name(const std::string& name) {
    std::array<char, 1024> b{};
    std::memcpy(b.data(), name.data(), std::min<std::size_t>(name.size(), 1023));
    put<std::uint16_t>(1);
    raw(b.data(), b.size());
  }
  void text(std::uint16_t id, const std::string& t) {  // with the NUL the python server adds
    put<std::uint16_t>(id);
    put<std::uint32_t>(std::uint32_t(t.size() + 1));
    raw(t.data(), t.size());
    put<char>('\0');
  }
  void acquisition(const Spoke& s, const ISMRMRD::ISMRMRD_AcquisitionHeader* head = nullptr,
                   bool traj = true) {
    const auto h = acquisition_header_bytes(s.header, s.samples, s.coils, traj ? 2 : 0);
    put<std::uint16_t>(1008);
    if (head)
      raw(head, 340);
    else
      raw(h.data(), h.size());
    if (traj) raw(s.traj.data(), s.traj.size() * 4);
    raw(s.data.data(), s.data.size() * 8);
  }
  // Sends what was put, in pieces of `piece` bytes (0: at once).
  bool flush(std::size_t piece = 0) {
    std::size_t off = 0;
    while (off < out_.size()) {
      const std::size_t n = piece ? std::min(piece, out_.size() - off) : out_.size() - off;
      const ssize_t k = ::send(fd_, out_.data() + off, n, MSG_NOSIGNAL);
      if (k <= 0) return false;
      off += std::size_t(k);
    }
    out_.clear();
    return true;
  }
  bool read_exact(void* p, std::size_t n) {
    auto* b = static_cast<char*>(p);
    std::size_t got = 0;
    while (got < n) {
      const ssize_t k = ::read(fd_, b + got, n - got);  // (a socket, or a file: FromFd)
      if (k <= 0) return false;
      got += std::size_t(k);
    }
    return true;
  }
  // Everything the server sends until its close, the connection's end or 10 s of silence.
  Replies read_until_close() {
    Replies r;
    for (;;) {
      std::uint16_t id = 0;
      if (!read_exact(&id, 2)) return r;
      if (id == 4) {
        r.closed = true;
        return r;
      }
      if (id == 5) {
        std::uint32_t n = 0;
        if (!read_exact(&n, 4)) return r;
        std::string t(n, '\0');
        if (!read_exact(t.data(), n)) return r;
        while (!t.empty() && t.back() == '\0') t.pop_back();
        r.texts.push_back(t);
      } else if (id == 1022) {
        ImageBack im;
        std::uint64_t alen = 0;
        if (!read_exact(&im.head, 198) || !read_exact(&alen, 8)) return r;
        im.attributes.resize(alen);
        if (!read_exact(im.attributes.data(), alen)) return r;
        const std::size_t elem = im.head.data_type == ISMRMRD::ISMRMRD_FLOAT     ? 4
                                 : im.head.data_type == ISMRMRD::ISMRMRD_CXFLOAT ? 8
                                                                                 : 2;
        im.pixels.resize(std::size_t(im.head.matrix_size[0]) * im.head.matrix_size[1] *
                         im.head.matrix_size[2] * im.head.channels * elem);
        if (!read_exact(im.pixels.data(), im.pixels.size())) return r;
        r.images.push_back(std::move(im));
      } else {
        ADD_FAILURE() << "unexpected message id " << id << " from the server";
        return r;
      }
    }
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
  std::vector<std::byte> out_;
};

inline int port_of(const std::string& endpoint) {
  return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

inline SimParams mrd_sim() {
  SimParams s;
  s.matrix = 32;
  s.coils = 3;
  s.snr = 30;
  return s;
}

inline RunConfig mrd_config(int port, MrdPixels px) {
  RunConfig c = small_config(port, false);  // every frame
  c.mrd.listen = "tcp://127.0.0.1:*";
  c.mrd.pixels = px;
  c.mrd.message_timeout_s = 0.5;
  c.mrd.config_dir = RADSTREAM_CONFIG_DIR;
  return c;
}

inline std::vector<float> image_values(const ImageBack& im) {
  const std::size_t n =
      std::size_t(im.head.matrix_size[0]) * im.head.matrix_size[1] * std::max<int>(1, im.head.matrix_size[2]);
  std::vector<float> v(n);
  if (im.head.data_type == ISMRMRD::ISMRMRD_FLOAT) {
    std::memcpy(v.data(), im.pixels.data(), n * 4);
  } else {
    const double scale = im.meta("ImageScale");
    for (std::size_t i = 0; i < n; ++i) {
      std::int16_t s;
      std::memcpy(&s, im.pixels.data() + 2 * i, 2);
      v[i] = float(double(s) / scale);
    }
  }
  return v;
}

}  // namespace radstream::mrdtest
