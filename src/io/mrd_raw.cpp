#include "io/mrd_raw.hpp"

#include <fmt/format.h>
#include <hdf5.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>

#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "io/hdf5_errors.hpp"
#include "io/mrd2_file.hpp"
#include "io/mrd_file.hpp"
#include "io/mrd_stream_file.hpp"

namespace radstream {

MrdRawWriter::MrdRawWriter(const std::string& path, const std::string& xml) : path_(path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (path.size() > 5 && path.ends_with(".mrd2")) {
    v2_ = std::make_unique<Mrd2Writer>(path, xml);
    return;
  }
  if (path.size() > 4 && path.ends_with(".mrd")) {
    stream_ = std::make_unique<MrdStreamWriter>(path, xml);
    return;
  }
  try {
    quiet_ismrmrd_errors();
    ds_ = std::make_unique<ISMRMRD::Dataset>(path.c_str(), "dataset", true);
    ds_->writeHeader(xml);
  } catch (const std::exception& e) {
    throw IoError(fmt::format("{}: cannot create the MRD file: {}", path, short_hdf5_error(e.what())));
  }
  // HDF5 finds the file already open in this process and shares it: flushing this id flushes the file.
  // (Same access properties as libismrmrd's open, or HDF5 refuses to share.)
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (id < 0) throw IoError(fmt::format("{}: cannot open the new MRD file for flushing", path));
  flush_id_ = id;
  flush();  // the header alone is already a readable file
}

MrdRawWriter::~MrdRawWriter() {
  if (stream_ || v2_) {
    if (abandoned_ && stream_) stream_->abandon();
    if (abandoned_ && v2_) v2_->abandon();
    return;
  }
  if (abandoned_) {
    (void)ds_.release();  // deliberately never closed (see abandon())
    return;
  }
  if (flush_id_ >= 0) H5Fclose(hid_t(flush_id_));
}

void MrdRawWriter::flush() {
  if (stream_) return stream_->flush();
  if (v2_) return v2_->flush();
  if (H5Fflush(hid_t(flush_id_), H5F_SCOPE_GLOBAL) < 0)
    throw IoError(
        fmt::format("{}: cannot write to the disk after {} acquisitions (disk full?)", path_, count_));
}

void MrdRawWriter::append(std::span<const std::byte> bytes, std::span<const float> traj,
                          std::span<const cfloat> data) {
  if (bytes.size() != sizeof(ISMRMRD::ISMRMRD_AcquisitionHeader))
    throw InputError(fmt::format("{}: acquisition header of {} bytes", path_, bytes.size()));
  if (stream_ || v2_) {
    if (stream_)
      stream_->append(bytes, traj, data);
    else
      v2_->append(bytes, traj, data);
    ++count_;
    return;
  }
  ISMRMRD::AcquisitionHeader h;
  std::memcpy(static_cast<ISMRMRD::ISMRMRD_AcquisitionHeader*>(&h), bytes.data(), bytes.size());
  const std::size_t S = h.number_of_samples, C = h.active_channels, D = h.trajectory_dimensions;
  if (traj.size() != S * D || data.size() != S * C)
    throw InputError(
        fmt::format("{}: spoke buffers ({} traj, {} data values) disagree with its header "
                    "({} samples x {} coils, {} dims)",
                    path_, traj.size(), data.size(), S, C, D));
  ISMRMRD::Acquisition acq;
  acq.setHead(h);
  if (D) std::memcpy(acq.getTrajPtr(), traj.data(), traj.size_bytes());
  std::memcpy(static_cast<void*>(acq.getDataPtr()), data.data(), data.size_bytes());
  try {
    ds_->appendAcquisition(acq);
  } catch (const std::exception& e) {
    throw IoError(
        fmt::format("{}: cannot append acquisition {}: {}", path_, count_, short_hdf5_error(e.what())));
  }
  ++count_;
}

}  // namespace radstream
