#include "io/impatient.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/error.hpp"

namespace radstream {

namespace {

// The largest IMPATIENT file read (the seeds' cases are a few MB; 2^28 samples of one float): a file's
// size is checked before it is read, so a sparse file of 6 GiB (which takes no disk) costs nothing.
constexpr std::uintmax_t kMaxImpatientBytes = std::uintmax_t(1) << 30;

// The whole file, which must be a regular file (a FIFO or a link to a device would be read without end).
std::vector<char> slurp(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw IoError("IMPATIENT: " + path +
                  (std::filesystem::exists(path, ec) ? " is not a regular file" : " does not exist"));
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError("IMPATIENT: cannot size " + path + ": " + ec.message());
  if (size > kMaxImpatientBytes)
    throw IoError("IMPATIENT: " + path + " is " + std::to_string(size) + " bytes, more than the " +
                  std::to_string(kMaxImpatientBytes >> 20) + " MiB an input file may take");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError("IMPATIENT: cannot open " + path);
  std::vector<char> b(size);
  if (!f.read(b.data(), std::streamsize(size))) throw IoError("IMPATIENT: cannot read " + path);
  return b;
}

template <class T>
T read_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

ImpatientArray read_v02(const std::string& path, const std::vector<char>& b) {
  if (b.size() < 20) throw IoError("IMPATIENT: " + path + " is shorter than its 20-byte header");
  const auto rows = read_le<std::int32_t>(b.data() + 4), coils = read_le<std::int32_t>(b.data() + 8),
             slices = read_le<std::int32_t>(b.data() + 12);
  if (rows < 0 || coils < 1 || slices < 1)
    throw IoError("IMPATIENT: " + path + " header says rows " + std::to_string(rows) + ", coils " +
                  std::to_string(coils) + ", slices " + std::to_string(slices));
  const std::size_t n = std::size_t(rows) * std::size_t(coils) * std::size_t(slices);
  if (b.size() - 20 != n * 4)
    throw IoError("IMPATIENT: " + path + " holds " + std::to_string((b.size() - 20) / 4) +
                  " values, its header " + std::to_string(n));
  ImpatientArray a;
  a.coils = coils;
  a.values.resize(n);
  std::memcpy(a.values.data(), b.data() + 20, n * 4);
  return a;
}

// The next text line from position p (without its newline).
std::string line_at(const std::vector<char>& b, std::size_t& p) {
  std::string s;
  while (p < b.size() && b[p] != '\n') s += b[p++];
  if (p < b.size()) ++p;
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

long long value_of(const std::string& line, const std::string& path) {
  const auto eq = line.find('=');
  if (eq == std::string::npos)
    throw IoError("IMPATIENT: " + path + ": no '=' in header line \"" + line + "\"");
  try {
    return std::stoll(line.substr(eq + 1));
  } catch (const std::exception&) {
    throw IoError("IMPATIENT: " + path + ": no number in header line \"" + line + "\"");
  }
}

ImpatientArray read_v10(const std::string& path, const std::vector<char>& b) {
  ImpatientArray a;
  a.coils = 0;
  std::size_t p = 0;
  long long file_size = -1;
  while (p < b.size()) {
    const std::string l = line_at(b, p);
    if (l.rfind("xDimension", 0) == 0)
      a.dims[0] = int(value_of(l, path));
    else if (l.rfind("yDimension", 0) == 0)
      a.dims[1] = int(value_of(l, path));
    else if (l.rfind("zDimension", 0) == 0)
      a.dims[2] = int(value_of(l, path));
    else if (l.rfind("file_size", 0) == 0)
      file_size = value_of(l, path);
    else if (l.rfind("Binary_Size", 0) == 0) {
      const long long n = value_of(l, path);
      const std::string tag = line_at(b, p);
      if (tag.rfind("Binary:", 0) != 0)
        throw IoError("IMPATIENT: " + path + ": \"Binary:\" expected after " + l);
      if (n < 0 || std::size_t(n) * 4 > b.size() - p)
        throw IoError("IMPATIENT: " + path + ": Binary_Size " + std::to_string(n) +
                      " runs past the end of the file");
      const std::size_t at = a.values.size();
      a.values.resize(at + std::size_t(n));
      std::memcpy(a.values.data() + at, b.data() + p, std::size_t(n) * 4);
      p += std::size_t(n) * 4;
      ++a.coils;
    }
  }
  if (a.coils == 0) throw IoError("IMPATIENT: " + path + " has no \"Binary:\" block");
  if (file_size >= 0 && std::size_t(file_size) != a.values.size())
    throw IoError("IMPATIENT: " + path + " holds " + std::to_string(a.values.size()) +
                  " values, its file_size " + std::to_string(file_size));
  return a;
}

}  // namespace

ImpatientArray read_impatient_array(const std::string& path) {
  const auto b = slurp(path);
  ImpatientArray a;
  if (b.size() >= 7 && std::memcmp(b.data(), "version", 7) == 0)
    a = read_v10(path, b);
  else if (b.size() >= 4 && std::abs(read_le<float>(b.data()) - 0.2f) < 1e-6f)
    a = read_v02(path, b);
  else
    throw IoError("IMPATIENT: " + path + " is neither version 0.2 (binary header) nor 1.0 (text header)");
  for (std::size_t i = 0; i < a.values.size(); ++i)  // NaN in, NaN out would pass for an image
    if (!std::isfinite(a.values[i]))
      throw IoError("IMPATIENT: " + path + ": value " + std::to_string(i) + " is NaN or Inf (" +
                    std::to_string(a.values[i]) + ")");
  return a;
}

ImpatientCase read_impatient_case(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw IoError("IMPATIENT: " + dir + " is not a folder");
  ImpatientCase c;
  c.dir = dir;
  auto file = [&](const char* name) { return (fs::path(dir) / (std::string(name) + ".dat")).string(); };
  auto need = [&](const char* name, std::size_t n, int coils = 1) {
    auto a = read_impatient_array(file(name));
    if (a.dims[0]) c.dims = a.dims;
    if (n && a.values.size() != n * std::size_t(coils))
      throw IoError("IMPATIENT: " + file(name) + " holds " + std::to_string(a.values.size()) + " values, " +
                    std::to_string(n * std::size_t(coils)) + " expected");
    return a;
  };
  auto optional = [&](const char* name, std::size_t n, int coils = 1) {
    return fs::exists(file(name)) ? need(name, n, coils).values : std::vector<float>{};
  };
  c.kx = need("kx", 0).values;
  c.samples = c.kx.size();
  if (c.samples == 0) throw IoError("IMPATIENT: " + file("kx") + " holds no values (no k-space samples)");
  c.ky = need("ky", c.samples).values;
  c.kz = optional("kz", c.samples);
  c.t = optional("t", c.samples);
  const auto kr = need("kdata_r", 0);
  c.coils = kr.coils;
  if (c.coils < 1)
    throw IoError("IMPATIENT: " + file("kdata_r") + " declares " + std::to_string(c.coils) + " coils");
  if (kr.values.size() % c.samples != 0 || kr.values.size() / c.samples != std::size_t(c.coils))
    throw IoError("IMPATIENT: " + file("kdata_r") + " holds " + std::to_string(kr.values.size()) +
                  " values, not " + std::to_string(c.coils) + " coils of " + std::to_string(c.samples) +
                  " samples");
  c.kdata_r = kr.values;
  c.kdata_i = need("kdata_i", c.samples, c.coils).values;
  c.ix = need("ix", 0).values;
  c.voxels = c.ix.size();
  if (c.voxels == 0) throw IoError("IMPATIENT: " + file("ix") + " holds no values (no image voxels)");
  c.iy = need("iy", c.voxels).values;
  c.iz = optional("iz", c.voxels);
  c.fm = optional("fm", c.voxels);
  c.gx = optional("fmgx", c.voxels);
  c.gy = optional("fmgy", c.voxels);
  c.gz = optional("fmgz", c.voxels);
  c.mask = optional("mask", c.voxels);
  if (fs::exists(file("sensi_r"))) {
    c.sens_r = need("sensi_r", c.voxels, c.coils).values;
    c.sens_i = need("sensi_i", c.voxels, c.coils).values;
  }
  return c;
}

}  // namespace radstream
