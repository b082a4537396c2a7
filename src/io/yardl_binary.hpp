// yardl's compact binary encoding (the format of MRD 2 files), its primitives: unsigned integers as varints
// (7 bits a byte, least significant first, the high bit saying more follows), signed ones zig-zag mapped
// first (n >= 0 -> 2n, n < 0 -> 2|n| - 1), floats and complex floats little-endian IEEE 754, strings as a
// varint byte count and the UTF-8 bytes. Every length a file declares is checked against what the file still
// holds before anything is allocated for it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace radstream::yardl {

// Reads a file (or the part of one after a given offset) with its offset, its size and its name in every
// error (IoError "NAME: at byte N: ...").
class Input {
 public:
  Input(std::FILE* f, std::string name);  // takes the file's size; does not own f
  std::uint64_t offset() const { return off_; }
  std::uint64_t remaining() const { return size_ - off_; }
  void seek(std::uint64_t offset);
  void read(void* out, std::size_t n);
  void skip(std::uint64_t n);
  bool at_end() const { return off_ >= size_; }

  std::uint64_t varint();
  std::int64_t svarint();
  float f32();
  double f64();
  std::string string();
  // A count of items that take at least `min_bytes` each in the file: refused naming `what` when the file
  // cannot hold that many.
  std::uint64_t count(std::size_t min_bytes, const char* what);
  [[noreturn]] void fail(const std::string& why) const;
  // Refuses (as the file's end) `what` of n bytes when the file holds fewer: checked before allocating.
  void need(std::uint64_t n, const std::string& what);
  // Whether a read failed because the file ended (a recording cut short) rather than on a bad value.
  bool hit_end() const { return hit_end_; }

 private:
  std::FILE* f_;
  std::string name_;
  std::uint64_t off_ = 0, size_ = 0;
  bool hit_end_ = false;
};

// Appends the encoding to a byte buffer.
class Output {
 public:
  explicit Output(std::vector<std::byte>& buf) : buf_(buf) {}
  void bytes(const void* p, std::size_t n);
  void varint(std::uint64_t v);
  void svarint(std::int64_t v);
  void f32(float v) { bytes(&v, sizeof v); }
  void f64(double v) { bytes(&v, sizeof v); }
  void string(const std::string& s);

 private:
  std::vector<std::byte>& buf_;
};

// The zig-zag mapping of signed integers to unsigned ones, and back.
constexpr std::uint64_t zigzag(std::int64_t v) {
  return (std::uint64_t(v) << 1) ^ std::uint64_t(v >> 63);
}
constexpr std::int64_t unzigzag(std::uint64_t u) {
  return std::int64_t(u >> 1) ^ -std::int64_t(u & 1);
}

}  // namespace radstream::yardl
