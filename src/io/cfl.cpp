#include "io/cfl.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace radstream {

std::string cfl_base(const std::string& path) {
  for (const char* ext : {".cfl", ".hdr"})
    if (path.size() > 4 && path.compare(path.size() - 4, 4, ext) == 0) return path.substr(0, path.size() - 4);
  return path;
}

std::vector<long> CflArray::squeezed() const {
  std::vector<long> out;
  for (long d : dims)
    if (d != 1) out.push_back(d);
  return out;
}

namespace {
constexpr std::uintmax_t kMaxHeaderBytes = 1 << 16;
}  // namespace

CflArray read_cfl(const std::string& path, std::size_t max_elements) {
  const std::string base = cfl_base(path);
  const std::string hdr = base + ".hdr", cfl = base + ".cfl";
  // Both must be regular files of bounded size: a FIFO or a link to a device would be read without end.
  for (const std::string& f : {hdr, cfl}) {
    std::error_code ec;
    if (std::filesystem::exists(f, ec) && !std::filesystem::is_regular_file(f, ec))
      throw IoError(fmt::format("{}: not a regular file", f));
  }
  {
    std::error_code ec;
    const auto hdr_bytes = std::filesystem::file_size(hdr, ec);
    if (!ec && hdr_bytes > kMaxHeaderBytes)
      throw IoError(fmt::format("{}: {} bytes, more than a BART header's {} (not a header)", hdr, hdr_bytes,
                                kMaxHeaderBytes));
  }
  std::ifstream h(hdr);
  if (!h) throw IoError(fmt::format("{}: cannot open the BART header", hdr));
  CflArray a;
  std::string line;
  bool found = false;
  while (std::getline(h, line)) {
    if (line.rfind("# Dimensions", 0) == 0) {
      if (!std::getline(h, line)) break;
      std::istringstream ss(line);
      std::string tok;
      while (ss >> tok) {
        long v = 0;
        std::size_t used = 0;
        try {
          v = std::stol(tok, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != tok.size()) throw IoError(fmt::format("{}: dimension '{}' is not an integer", hdr, tok));
        if (v < 1) throw IoError(fmt::format("{}: dimension {} = {} must be >= 1", hdr, a.dims.size(), v));
        a.dims.push_back(v);
      }
      found = true;
      break;
    }
  }
  if (!found || a.dims.empty()) throw IoError(fmt::format("{}: no '# Dimensions' line", hdr));
  if (a.dims.size() > 16) throw IoError(fmt::format("{}: {} dimensions, at most 16", hdr, a.dims.size()));
  std::size_t n = 1;
  for (long d : a.dims) {
    if (std::size_t(d) > max_elements || n > max_elements / std::size_t(d))
      throw IoError(
          fmt::format("{}: dimensions declare more than {} elements (the limit)", hdr, max_elements));
    n *= std::size_t(d);
  }
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(cfl, ec);
  if (ec) throw IoError(fmt::format("{}: cannot open the data file ({})", cfl, ec.message()));
  if (bytes != n * sizeof(cfloat))
    throw IoError(fmt::format("{}: holds {} bytes, the header declares {} complex values = {} bytes ({})",
                              cfl, bytes, n, n * sizeof(cfloat),
                              bytes < n * sizeof(cfloat) ? "truncated" : "too long"));
  a.data.resize(n);
  std::ifstream f(cfl, std::ios::binary);
  if (!f.read(reinterpret_cast<char*>(a.data.data()), std::streamsize(n * sizeof(cfloat))))
    throw IoError(fmt::format("{}: read failed", cfl));
  for (std::size_t i = 0; i < n; ++i)  // NaN in, NaN out would pass for an image: refuse it, naming where
    if (!std::isfinite(a.data[i].real()) || !std::isfinite(a.data[i].imag()))
      throw IoError(
          fmt::format("{}: value {} is NaN or Inf ({}, {})", cfl, i, a.data[i].real(), a.data[i].imag()));
  return a;
}

void write_cfl(const std::string& path, const std::vector<long>& dims, std::span<const cfloat> data) {
  const std::string base = cfl_base(path);
  std::size_t n = 1;
  for (long d : dims) n *= std::size_t(d);
  if (n != data.size())
    throw IoError(fmt::format("{}: {} values do not fill the dimensions (product {})", base, data.size(), n));
  {
    std::ofstream h(base + ".hdr");
    if (!h) throw IoError(fmt::format("{}.hdr: cannot open for writing", base));
    h << "# Dimensions\n";
    for (int i = 0; i < 16; ++i) h << (i < int(dims.size()) ? dims[i] : 1) << ' ';
    h << "\n";
    if (!h) throw IoError(fmt::format("{}.hdr: write failed", base));
  }
  std::ofstream f(base + ".cfl", std::ios::binary);
  if (!f) throw IoError(fmt::format("{}.cfl: cannot open for writing", base));
  f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * sizeof(cfloat)));
  if (!f) throw IoError(fmt::format("{}.cfl: write failed", base));
}

}  // namespace radstream
