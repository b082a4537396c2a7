// Reads the acquisitions of an MRD (ISMRMRD v1) file: an MRD stream file (io/mrd_stream_file.hpp, told by its
// first bytes) through the stream codec, or an HDF5 file with radstream's own code on the HDF5 C library, so
// that a crafted file cannot make it read past what is stored: each acquisition's trajectory and data are
// read as the lengths the file stores, and an acquisition whose header disagrees with them (libismrmrd sizes
// its copy from the header) is an IoError naming the file and the acquisition, found before HDF5 allocates
// them (mrd_declared_lengths.hpp). The file is opened read-only
// and without HDF5's file lock, so several processes can read one file (also one still being recorded).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "io/mrd_declared_lengths.hpp"
#include "io/mrd_raw.hpp"
#include "io/mrd_stream_file.hpp"

namespace radstream {

class MrdReader {
 public:
  // Throws IoError naming the file and the problem: missing, not HDF5, no /dataset/xml, no acquisition
  // dataset of the MRD type (an empty file of acquisitions is fine: count() is 0).
  explicit MrdReader(const std::string& path);
  ~MrdReader();
  MrdReader(const MrdReader&) = delete;
  MrdReader& operator=(const MrdReader&) = delete;

  const std::string& path() const { return path_; }
  const std::string& xml() const { return xml_; }
  std::size_t count() const { return count_; }
  // Acquisition i, its 340 header bytes verbatim. Throws IoError when i is out of range, the read fails, or
  // the stored trajectory / data lengths are not what its header's samples, coils and dimensions make.
  RawSpoke read(std::size_t i);

 private:
  std::string path_, xml_;
  std::size_t count_ = 0;
  long long file_ = -1, data_ = -1, mem_type_ = -1;  // HDF5 ids (hid_t), -1: none
  std::unique_ptr<MrdDeclaredLengths> declared_;     // checked before each read allocates
  std::unique_ptr<MrdStreamReader> stream_;          // an MRD stream file (told by its first bytes)
  void close() noexcept;
};

}  // namespace radstream
