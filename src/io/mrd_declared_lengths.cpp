#include "io/mrd_declared_lengths.hpp"

#include <fmt/format.h>
#include <hdf5.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace radstream {
namespace {

// Byte offset of member `name` of compound `t` (the file's type), or -1.
long long offset_of(hid_t t, const char* name) {
  const int m = H5Tget_member_index(t, name);
  return m < 0 ? -1 : (long long)H5Tget_member_offset(t, unsigned(m));
}

std::uint32_t u32_at(const unsigned char* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
         std::uint32_t(p[3]) << 24;
}
std::uint16_t u16_at(const unsigned char* p) {
  return std::uint16_t(p[0] | p[1] << 8);
}

}  // namespace

MrdDeclaredLengths::MrdDeclaredLengths(long long dataset, const std::string& path)
    : dataset_(dataset), path_(path) {
  std::error_code ec;
  file_bytes_ = std::filesystem::file_size(path, ec);
  if (ec) return;
  const hid_t d = hid_t(dataset);
  const hid_t type = H5Dget_type(d);
  if (type < 0) return;
  const long long traj = offset_of(type, "traj"), data = offset_of(type, "data"),
                  head = offset_of(type, "head");
  const int head_index = H5Tget_member_index(type, "head");
  long long samples = -1, channels = -1, dims = -1;
  if (head_index >= 0) {
    const hid_t ht = H5Tget_member_type(type, unsigned(head_index));
    if (ht >= 0) {
      if (H5Tget_class(ht) == H5T_COMPOUND) {
        samples = offset_of(ht, "number_of_samples");
        channels = offset_of(ht, "active_channels");
        dims = offset_of(ht, "trajectory_dimensions");
      }
      H5Tclose(ht);
    }
  }
  elem_ = H5Tget_size(type);
  const int traj_index = H5Tget_member_index(type, "traj");
  bool vlen_ok = false;
  if (traj_index >= 0) {  // the descriptor on disk: a 4-byte length, then a heap reference
    const hid_t vt = H5Tget_member_type(type, unsigned(traj_index));
    vlen_ok = vt >= 0 && H5Tget_class(vt) == H5T_VLEN && H5Tget_size(vt) >= 4;
    if (vt >= 0) H5Tclose(vt);
  }
  H5Tclose(type);
  if (!vlen_ok || traj < 0 || data < 0 || head < 0 || samples < 0 || channels < 0 || dims < 0) return;
  traj_at_ = std::size_t(traj);
  data_at_ = std::size_t(data);
  samples_at_ = std::size_t(head + samples);
  channels_at_ = std::size_t(head + channels);
  dims_at_ = std::size_t(head + dims);
  const hid_t plist = H5Dget_create_plist(d);
  if (plist < 0) return;
  const H5D_layout_t layout = H5Pget_layout(plist);
  hsize_t chunk = 0;
  if (layout == H5D_CHUNKED && H5Pget_nfilters(plist) == 0 && H5Pget_chunk(plist, 1, &chunk) == 1 &&
      chunk > 0) {
    chunk_ = chunk;
    layout_ = Layout::Chunked;
  } else if (layout == H5D_CONTIGUOUS) {
    const haddr_t at = H5Dget_offset(d);
    if (at != HADDR_UNDEF) {
      contiguous_at_ = at;
      layout_ = Layout::Contiguous;
    }
  }
  H5Pclose(plist);
}

const unsigned char* MrdDeclaredLengths::element(std::size_t i) {
  if (layout_ == Layout::Chunked) {
    hsize_t first = hsize_t(i / chunk_ * chunk_);
    if (first != cached_) {
      hsize_t stored = 0;
      if (H5Dget_chunk_storage_size(hid_t(dataset_), &first, &stored) < 0 || stored != chunk_ * elem_)
        return nullptr;  // not written, or stored otherwise: HDF5's own read decides
      buf_.resize(std::size_t(stored));
      std::uint32_t filters = 0;
      if (H5Dread_chunk(hid_t(dataset_), H5P_DEFAULT, &first, &filters, buf_.data()) < 0 || filters != 0)
        return nullptr;
      cached_ = first;
    }
    return buf_.data() + (i - std::size_t(first)) * elem_;
  }
  buf_.resize(elem_);
  std::ifstream f(path_, std::ios::binary);
  f.seekg(std::streamoff(contiguous_at_ + std::uint64_t(i) * elem_));
  if (!f.read(reinterpret_cast<char*>(buf_.data()), std::streamsize(elem_))) return nullptr;
  return buf_.data();
}

void MrdDeclaredLengths::check(std::size_t i) {
  if (layout_ == Layout::None) return;
  const unsigned char* e = element(i);
  if (!e) return;
  const std::uint64_t traj = u32_at(e + traj_at_), data = u32_at(e + data_at_);
  const std::uint64_t S = u16_at(e + samples_at_), C = u16_at(e + channels_at_), D = u16_at(e + dims_at_);
  if (traj != S * D || data != 2 * S * C)
    throw IoError(
        fmt::format("{}: acquisition {} stores {} trajectory and {} data floats, its header says {} samples "
                    "x {} coils x {} dimensions ({} and {}); not read",
                    path_, i, traj, data, S, C, D, S * D, 2 * S * C));
  if ((traj + data) * sizeof(float) > file_bytes_)
    throw IoError(
        fmt::format("{}: acquisition {} declares {} floats ({:.1f} MiB), more than the whole file holds "
                    "({:.1f} MiB); not read",
                    path_, i, traj + data, double((traj + data) * sizeof(float)) / 1048576.0,
                    double(file_bytes_) / 1048576.0));
}

}  // namespace radstream
