#include "io/mrd_reader.hpp"

#include <fmt/format.h>
#include <hdf5.h>
#include <ismrmrd/ismrmrd.h>

#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/mrd_file.hpp"

namespace radstream {
namespace {

using Head = ISMRMRD::ISMRMRD_AcquisitionHeader;
static_assert(sizeof(Head) == 340, "the MRD v1 acquisition header is 340 bytes");

// One stored acquisition as read into memory: the header, then the trajectory and data as HDF5 allocated them
// (their lengths are what the file stores, whatever the header says).
struct Stored {
  Head head;
  hvl_t traj;
  hvl_t data;
};

// An HDF5 id closed by the function that matches its kind.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }
  hid_t release() {
    const hid_t i = id_;
    id_ = -1;
    return i;
  }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// HDF5's printing of its error stack is off while one lives (radstream reports each failure once, in one line
// naming the file); the previous setting comes back after.
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

hid_t array_of(hid_t base, hsize_t n) {
  return H5Tarray_create2(base, 1, &n);
}

// The MRD acquisition header as HDF5 sees it: the member names of the format, laid out as the C struct.
hid_t head_type() {
  Id idx(H5Tcreate(H5T_COMPOUND, sizeof(ISMRMRD::ISMRMRD_EncodingCounters)), H5Tclose);
  using E = ISMRMRD::ISMRMRD_EncodingCounters;
  H5Tinsert(idx.get(), "kspace_encode_step_1", HOFFSET(E, kspace_encode_step_1), H5T_NATIVE_UINT16);
  H5Tinsert(idx.get(), "kspace_encode_step_2", HOFFSET(E, kspace_encode_step_2), H5T_NATIVE_UINT16);
  H5Tinsert(idx.get(), "average", HOFFSET(E, average), H5T_NATIVE_UINT16);
  H5Tinsert(idx.get(), "slice", HOFFSET(E, slice), H5T_NATIVE_UINT16);
  H5Tinsert(idx.get(), "contrast", HOFFSET(E, contrast), H5T_NATIVE_UINT16);
  H5Tinsert(idx.get(), "phase", HOFFSET(E, phase), H5T_NATIVE_UINT16);
  H5Tinsert(idx.get(), "repetition", HOFFSET(E, repetition), H5T_NATIVE_UINT16);
  H5Tinsert(idx.get(), "set", HOFFSET(E, set), H5T_NATIVE_UINT16);
  H5Tinsert(idx.get(), "segment", HOFFSET(E, segment), H5T_NATIVE_UINT16);
  Id user(array_of(H5T_NATIVE_UINT16, ISMRMRD::ISMRMRD_USER_INTS), H5Tclose);
  H5Tinsert(idx.get(), "user", HOFFSET(E, user), user.get());

  Id t(H5Tcreate(H5T_COMPOUND, sizeof(Head)), H5Tclose);
  const hid_t h = t.get();
  H5Tinsert(h, "version", HOFFSET(Head, version), H5T_NATIVE_UINT16);
  H5Tinsert(h, "flags", HOFFSET(Head, flags), H5T_NATIVE_UINT64);
  H5Tinsert(h, "measurement_uid", HOFFSET(Head, measurement_uid), H5T_NATIVE_UINT32);
  H5Tinsert(h, "scan_counter", HOFFSET(Head, scan_counter), H5T_NATIVE_UINT32);
  H5Tinsert(h, "acquisition_time_stamp", HOFFSET(Head, acquisition_time_stamp), H5T_NATIVE_UINT32);
  Id phys(array_of(H5T_NATIVE_UINT32, ISMRMRD::ISMRMRD_PHYS_STAMPS), H5Tclose);
  H5Tinsert(h, "physiology_time_stamp", HOFFSET(Head, physiology_time_stamp), phys.get());
  H5Tinsert(h, "number_of_samples", HOFFSET(Head, number_of_samples), H5T_NATIVE_UINT16);
  H5Tinsert(h, "available_channels", HOFFSET(Head, available_channels), H5T_NATIVE_UINT16);
  H5Tinsert(h, "active_channels", HOFFSET(Head, active_channels), H5T_NATIVE_UINT16);
  Id mask(array_of(H5T_NATIVE_UINT64, ISMRMRD::ISMRMRD_CHANNEL_MASKS), H5Tclose);
  H5Tinsert(h, "channel_mask", HOFFSET(Head, channel_mask), mask.get());
  H5Tinsert(h, "discard_pre", HOFFSET(Head, discard_pre), H5T_NATIVE_UINT16);
  H5Tinsert(h, "discard_post", HOFFSET(Head, discard_post), H5T_NATIVE_UINT16);
  H5Tinsert(h, "center_sample", HOFFSET(Head, center_sample), H5T_NATIVE_UINT16);
  H5Tinsert(h, "encoding_space_ref", HOFFSET(Head, encoding_space_ref), H5T_NATIVE_UINT16);
  H5Tinsert(h, "trajectory_dimensions", HOFFSET(Head, trajectory_dimensions), H5T_NATIVE_UINT16);
  H5Tinsert(h, "sample_time_us", HOFFSET(Head, sample_time_us), H5T_NATIVE_FLOAT);
  Id pos(array_of(H5T_NATIVE_FLOAT, ISMRMRD::ISMRMRD_POSITION_LENGTH), H5Tclose);
  Id dir(array_of(H5T_NATIVE_FLOAT, ISMRMRD::ISMRMRD_DIRECTION_LENGTH), H5Tclose);
  H5Tinsert(h, "position", HOFFSET(Head, position), pos.get());
  H5Tinsert(h, "read_dir", HOFFSET(Head, read_dir), dir.get());
  H5Tinsert(h, "phase_dir", HOFFSET(Head, phase_dir), dir.get());
  H5Tinsert(h, "slice_dir", HOFFSET(Head, slice_dir), dir.get());
  H5Tinsert(h, "patient_table_position", HOFFSET(Head, patient_table_position), pos.get());
  H5Tinsert(h, "idx", HOFFSET(Head, idx), idx.get());
  Id ints(array_of(H5T_NATIVE_INT32, ISMRMRD::ISMRMRD_USER_INTS), H5Tclose);
  Id floats(array_of(H5T_NATIVE_FLOAT, ISMRMRD::ISMRMRD_USER_FLOATS), H5Tclose);
  H5Tinsert(h, "user_int", HOFFSET(Head, user_int), ints.get());
  H5Tinsert(h, "user_float", HOFFSET(Head, user_float), floats.get());
  return t.release();
}

hid_t stored_type() {
  Id head(head_type(), H5Tclose);
  Id traj(H5Tvlen_create(H5T_NATIVE_FLOAT), H5Tclose);
  Id data(H5Tvlen_create(H5T_NATIVE_FLOAT), H5Tclose);  // MRD stores complex data as (real, imag) floats
  Id t(H5Tcreate(H5T_COMPOUND, sizeof(Stored)), H5Tclose);
  H5Tinsert(t.get(), "head", HOFFSET(Stored, head), head.get());
  H5Tinsert(t.get(), "traj", HOFFSET(Stored, traj), traj.get());
  H5Tinsert(t.get(), "data", HOFFSET(Stored, data), data.get());
  return t.release();
}

// An MRD header is a few kilobytes; what a file may declare is held to what the stream readers take.
constexpr std::size_t kMaxXmlBytes = std::size_t(64) << 20;

std::string read_xml(hid_t file, const std::string& path) {
  Id ds(H5Dopen2(file, "/dataset/xml", H5P_DEFAULT), H5Dclose);
  if (!ds.ok()) throw IoError(fmt::format("{}: the MRD file has no XML header (dataset/xml)", path));
  Id type(H5Dget_type(ds.get()), H5Tclose);
  Id space(H5Dget_space(ds.get()), H5Sclose);
  if (!type.ok() || H5Tget_class(type.get()) != H5T_STRING || H5Sget_simple_extent_npoints(space.get()) != 1)
    throw IoError(fmt::format("{}: dataset/xml is not one string", path));
  Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
  // The file's character set (ASCII as ISMRMRD writes it, or UTF-8 as h5py and others do): HDF5 converts
  // between none of them, so the memory type takes the stored one.
  const H5T_cset_t cset = H5Tget_cset(type.get());
  if (cset == H5T_CSET_ASCII || cset == H5T_CSET_UTF8) H5Tset_cset(mem.get(), cset);
  if (H5Tis_variable_str(type.get()) > 0) {
    H5Tset_size(mem.get(), H5T_VARIABLE);
    char* text = nullptr;
    if (H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) < 0 || !text)
      throw IoError(fmt::format("{}: cannot read dataset/xml", path));
    std::string xml(text);
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, &text);
    return xml;
  }
  const std::size_t n = H5Tget_size(type.get());
  // A fixed-length string's size is declared, not stored: a 1 GiB declaration in a small file (its storage
  // never written) used to cost 3 GB.
  if (n > kMaxXmlBytes)
    throw IoError(
        fmt::format("{}: dataset/xml is a fixed-length string of {} bytes, more than the {} MiB an "
                    "MRD header may take",
                    path, n, kMaxXmlBytes >> 20));
  std::vector<char> text(n + 1, '\0');
  H5Tset_size(mem.get(), n + 1);
  if (H5Dread(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()) < 0)
    throw IoError(fmt::format("{}: cannot read dataset/xml", path));
  return std::string(text.data());
}

}  // namespace

MrdReader::MrdReader(const std::string& path) : path_(path) {
  const MrdFileKind kind = sniff_mrd_file(path);
  if (kind == MrdFileKind::Stream) {
    stream_ = std::make_unique<MrdStreamReader>(path);
    xml_ = stream_->xml();
    count_ = stream_->count();
    return;
  }
  if (kind == MrdFileKind::Mrd2) {
    v2_ = std::make_unique<Mrd2Reader>(path);
    xml_ = v2_->xml();
    count_ = v2_->count();
    return;
  }
  const QuietHdf5 quiet;
  try {
    Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5Pset_file_locking(fapl.get(), false, true);  // readers take no lock: several may read one file
    file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
    if (file_ < 0) throw IoError(fmt::format("{}: cannot open as an HDF5 file", path));
    xml_ = read_xml(hid_t(file_), path);
    if (H5Lexists(hid_t(file_), "/dataset", H5P_DEFAULT) > 0 &&
        H5Lexists(hid_t(file_), "/dataset/data", H5P_DEFAULT) > 0) {
      data_ = H5Dopen2(hid_t(file_), "/dataset/data", H5P_DEFAULT);
      if (data_ < 0) throw IoError(fmt::format("{}: cannot open dataset/data", path));
      Id space(H5Dget_space(hid_t(data_)), H5Sclose);
      hsize_t n = 0;
      if (H5Sget_simple_extent_ndims(space.get()) != 1 ||
          H5Sget_simple_extent_dims(space.get(), &n, nullptr) != 1)
        throw IoError(fmt::format("{}: dataset/data is not a list of acquisitions", path));
      Id file_type(H5Dget_type(hid_t(data_)), H5Tclose);
      if (H5Tget_class(file_type.get()) != H5T_COMPOUND || H5Tget_member_index(file_type.get(), "head") < 0 ||
          H5Tget_member_index(file_type.get(), "traj") < 0 ||
          H5Tget_member_index(file_type.get(), "data") < 0)
        throw IoError(
            fmt::format("{}: dataset/data does not hold MRD acquisitions (head, traj, data)", path));
      mem_type_ = stored_type();
      count_ = std::size_t(n);
      declared_ = std::make_unique<MrdDeclaredLengths>(data_, path);
      leave_out_a_torn_tail();
    }
  } catch (...) {
    close();
    throw;
  }
}

bool MrdReader::readable(std::size_t i) {
  try {
    const RawSpoke r = read(i);
    Head h;
    std::memcpy(&h, r.acq_header.data(), sizeof(Head));
    return h.number_of_samples > 0 && h.active_channels > 0;
  } catch (const Error&) {
    return false;
  }
}

void MrdReader::leave_out_a_torn_tail() {
  if (count_ == 0 || readable(count_ - 1)) return;
  // The first acquisition of the tail that cannot be read (a torn tail is a suffix: what was flushed before
  // is whole).
  std::size_t good = 0, bad = count_ - 1;
  if (!readable(0)) {
    bad = 0;
  } else {
    while (bad - good > 1) {
      const std::size_t mid = good + (bad - good) / 2;
      (readable(mid) ? good : bad) = mid;
    }
  }
  torn_ = count_ - bad;
  log::warn(
      "{}: its last {} acquisition(s) cannot be read (a torn tail: the recording was cut off while it was "
      "being written); keeping the first {}",
      path_, torn_, bad);
  count_ = bad;
}

MrdReader::~MrdReader() {
  close();
}

void MrdReader::close() noexcept {
  if (mem_type_ >= 0) H5Tclose(hid_t(mem_type_));
  if (data_ >= 0) H5Dclose(hid_t(data_));
  if (file_ >= 0) H5Fclose(hid_t(file_));
  mem_type_ = data_ = file_ = -1;
}

RawSpoke MrdReader::read(std::size_t i) {
  if (stream_) return stream_->read(i);
  if (v2_) return v2_->read(i);
  if (i >= count_) throw IoError(fmt::format("{}: acquisition {} is outside 0..{}", path_, i, count_));
  Stored s{};
  herr_t got = -1;
  const QuietHdf5 quiet;
  if (declared_) declared_->check(i);  // before HDF5 allocates what the file declares
  Id mem_space(H5Screate(H5S_SCALAR), H5Sclose);
  {
    Id file_space(H5Dget_space(hid_t(data_)), H5Sclose);
    const hsize_t start = i, one = 1;
    if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &one, nullptr) >= 0)
      got = H5Dread(hid_t(data_), hid_t(mem_type_), mem_space.get(), file_space.get(), H5P_DEFAULT, &s);
  }
  struct Reclaim {  // HDF5 allocated the variable-length parts: give them back however this ends
    hid_t type, space;
    Stored* s;
    ~Reclaim() { H5Dvlen_reclaim(type, space, H5P_DEFAULT, s); }
  } reclaim{hid_t(mem_type_), mem_space.get(), &s};
  if (got < 0)
    throw IoError(fmt::format("{}: cannot read acquisition {} (a damaged or foreign file)", path_, i));
  const Head& h = s.head;
  const std::size_t S = h.number_of_samples, C = h.active_channels, D = h.trajectory_dimensions;
  if (s.traj.len != S * D || s.data.len != 2 * S * C)
    throw IoError(
        fmt::format("{}: acquisition {} stores {} trajectory and {} data floats, its header says {} "
                    "samples x {} coils x {} dimensions ({} and {})",
                    path_, i, s.traj.len, s.data.len, S, C, D, S * D, 2 * S * C));
  RawSpoke r;
  std::memcpy(r.acq_header.data(), &h, sizeof(Head));
  const auto* traj = static_cast<const float*>(s.traj.p);
  const auto* data = static_cast<const cfloat*>(s.data.p);
  r.traj.assign(traj, traj + S * D);
  r.data.assign(data, data + S * C);
  return r;
}

}  // namespace radstream
