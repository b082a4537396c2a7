// Spokes as received, in MRD HDF5 files: what the recorder writes and replay reads. The XML header text and
// each acquisition header (the 340 wire bytes) are kept verbatim, so a replay of a radstream recording sends
// byte-identical messages. Reading (io/mrd_reader.hpp) is one acquisition at a time (recordings can be larger
// than memory).
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.hpp"

namespace ISMRMRD {
class Dataset;
}

namespace radstream {

struct RawSpoke {
  std::array<std::byte, 340> acq_header;  // MRD AcquisitionHeader, verbatim
  std::vector<float> traj;                // [samples][dims]
  std::vector<cfloat> data;               // [coils][samples]
};

class MrdRawWriter {
 public:
  // Creates (or truncates) the file with this XML header text. Throws IoError naming the file.
  MrdRawWriter(const std::string& path, const std::string& xml);
  ~MrdRawWriter();
  // Sizes come from the header bytes (number_of_samples, active_channels, trajectory_dimensions); throws
  // InputError when the spans disagree with them, IoError when the write fails.
  void append(std::span<const std::byte> acq_header, std::span<const float> traj,
              std::span<const cfloat> data);
  std::size_t count() const { return count_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<ISMRMRD::Dataset> ds_;
  std::size_t count_ = 0;
};

}  // namespace radstream
