#include "io/yardl_binary.hpp"

#include <fmt/format.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace radstream::yardl {

static_assert(std::endian::native == std::endian::little, "yardl's floats are little-endian, as this host");

Input::Input(std::FILE* f, std::string name) : f_(f), name_(std::move(name)) {
  if (std::fseek(f_, 0, SEEK_END) != 0) fail(std::strerror(errno));
  const long end = std::ftell(f_);
  if (end < 0 || std::fseek(f_, 0, SEEK_SET) != 0) fail(std::strerror(errno));
  size_ = std::uint64_t(end);
}

void Input::fail(const std::string& why) const {
  throw IoError(fmt::format("{}: at byte {}: {}", name_, off_, why));
}

void Input::seek(std::uint64_t offset) {
  if (offset > size_ || std::fseek(f_, long(offset), SEEK_SET) != 0)
    fail(fmt::format("cannot seek to byte {}", offset));
  off_ = offset;
}

void Input::read(void* out, std::size_t n) {
  if (n > remaining()) {
    hit_end_ = true;
    fail(fmt::format("the file ends inside a value ({} bytes wanted, {} left)", n, remaining()));
  }
  if (std::fread(out, 1, n, f_) != n) fail(fmt::format("read error: {}", std::strerror(errno)));
  off_ += n;
}

void Input::need(std::uint64_t n, const std::string& what) {
  if (n <= remaining()) return;
  hit_end_ = true;
  fail(fmt::format("{} of {} bytes declared, more than the {} bytes left in the file", what, n, remaining()));
}

void Input::skip(std::uint64_t n) {
  if (n > remaining()) {
    hit_end_ = true;
    fail(fmt::format("the file ends inside a value ({} bytes to skip, {} left)", n, remaining()));
  }
  seek(off_ + n);
}

std::uint64_t Input::varint() {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    unsigned char b = 0;
    read(&b, 1);
    v |= std::uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      if (shift == 63 && b > 1) fail("a varint beyond 64 bits");
      return v;
    }
  }
  fail("a varint longer than 10 bytes");
}

std::int64_t Input::svarint() {
  return unzigzag(varint());
}

float Input::f32() {
  float v;
  read(&v, sizeof v);
  return v;
}

double Input::f64() {
  double v;
  read(&v, sizeof v);
  return v;
}

std::string Input::string() {
  const std::uint64_t n = count(1, "string bytes");
  std::string s(std::size_t(n), '\0');
  read(s.data(), s.size());
  return s;
}

std::uint64_t Input::count(std::size_t min_bytes, const char* what) {
  const std::uint64_t at = off_;
  const std::uint64_t n = varint();
  if (min_bytes > 0 && n > remaining() / min_bytes) {
    off_ = at;
    hit_end_ = true;
    fail(fmt::format("{} {} declared, more than the {} bytes left in the file can hold", n, what,
                     remaining()));
  }
  return n;
}

void Output::bytes(const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  buf_.insert(buf_.end(), b, b + n);
}

void Output::varint(std::uint64_t v) {
  while (v >= 0x80) {
    buf_.push_back(std::byte((v & 0x7f) | 0x80));
    v >>= 7;
  }
  buf_.push_back(std::byte(v));
}

void Output::svarint(std::int64_t v) {
  varint(zigzag(v));
}

void Output::string(const std::string& s) {
  varint(s.size());
  bytes(s.data(), s.size());
}

}  // namespace radstream::yardl
