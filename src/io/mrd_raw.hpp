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

class MrdStreamWriter;
class Mrd2Writer;

struct RawSpoke {
  std::array<std::byte, 340> acq_header;  // MRD AcquisitionHeader, verbatim
  std::vector<float> traj;                // [samples][dims]
  std::vector<cfloat> data;               // [coils][samples]
};

class MrdRawWriter {
 public:
  // Creates (or replaces) the file with this XML header text: an MRD stream file when the name ends in .mrd
  // (io/mrd_stream_file.hpp), an MRD 2 file when it ends in .mrd2 (io/mrd2_file.hpp), else HDF5. Throws
  // IoError naming the file.
  MrdRawWriter(const std::string& path, const std::string& xml);
  ~MrdRawWriter();
  MrdRawWriter(const MrdRawWriter&) = delete;
  MrdRawWriter& operator=(const MrdRawWriter&) = delete;
  // Sizes come from the header bytes (number_of_samples, active_channels, trajectory_dimensions); throws
  // InputError when the spans disagree with them, IoError when the write fails.
  void append(std::span<const std::byte> acq_header, std::span<const float> traj,
              std::span<const cfloat> data);
  // Writes everything appended so far to the disk (HDF5's metadata included): the file is readable as it is
  // now even if the process dies before the destructor. Throws IoError when the write fails.
  void flush();
  // After a write error: the file is never touched again, not even closed (its HDF5 handles are left to the
  // process's end; see hdf5_skip_exit_cleanup), so that it stays readable as last flushed.
  void abandon() { abandoned_ = true; }
  std::size_t count() const { return count_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<ISMRMRD::Dataset> ds_;
  std::unique_ptr<MrdStreamWriter> stream_;
  std::unique_ptr<Mrd2Writer> v2_;
  long long flush_id_ = -1;
  bool abandoned_ = false;  // a second HDF5 id on the same open file, for H5Fflush (libismrmrd has none)
  std::size_t count_ = 0;
};

}  // namespace radstream
