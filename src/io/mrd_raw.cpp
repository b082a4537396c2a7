#include "io/mrd_raw.hpp"

#include <fmt/format.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>

#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "io/hdf5_errors.hpp"
#include "io/mrd_file.hpp"

namespace radstream {

MrdRawWriter::MrdRawWriter(const std::string& path, const std::string& xml) : path_(path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  try {
    quiet_ismrmrd_errors();
    ds_ = std::make_unique<ISMRMRD::Dataset>(path.c_str(), "dataset", true);
    ds_->writeHeader(xml);
  } catch (const std::exception& e) {
    throw IoError(fmt::format("{}: cannot create the MRD file: {}", path, short_hdf5_error(e.what())));
  }
}

MrdRawWriter::~MrdRawWriter() = default;

void MrdRawWriter::append(std::span<const std::byte> bytes, std::span<const float> traj,
                          std::span<const cfloat> data) {
  if (bytes.size() != sizeof(ISMRMRD::ISMRMRD_AcquisitionHeader))
    throw InputError(fmt::format("{}: acquisition header of {} bytes", path_, bytes.size()));
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
    throw IoError(fmt::format("{}: cannot append acquisition {}: {}", path_, count_, short_hdf5_error(e.what())));
  }
  ++count_;
}

}  // namespace radstream
