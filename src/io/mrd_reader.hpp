// Reads the acquisitions of an MRD (ISMRMRD v1) file: an MRD stream file (io/mrd_stream_file.hpp, told by its
// first bytes) through the stream codec, an MRD 2 file (io/mrd2_file.hpp) in MRD v1 terms, or an HDF5 file
// with radstream's own code on the HDF5 C library, so that a crafted file cannot make it read past what is
// stored: each acquisition's trajectory and data are read as the lengths the file stores, and an acquisition
// whose header disagrees with them (libismrmrd sizes its copy from the header) is an IoError naming the file
// and the acquisition, found before HDF5 allocates them (mrd_declared_lengths.hpp). The file is opened
// read-only and without HDF5's file lock, so several processes can read one file (also one still being
// recorded). A torn tail (acquisitions at the end that cannot be read, or read as the zero fill of an extent
// written before its data) is left out with a warning naming how many were kept.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "io/mrd2_file.hpp"
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
  // Acquisitions at the end of an HDF5 file that cannot be read or hold nothing (a torn tail: the recording
  // was cut off while a flush was being written, e.g. killed). They are left out of count() and said once.
  std::size_t torn_tail() const { return torn_; }
  // Acquisition i, its 340 header bytes verbatim. Throws IoError when i is out of range, the read fails, or
  // the stored trajectory / data lengths are not what its header's samples, coils and dimensions make.
  RawSpoke read(std::size_t i);

 private:
  std::string path_, xml_;
  std::size_t count_ = 0, torn_ = 0;
  long long file_ = -1, data_ = -1, mem_type_ = -1;  // HDF5 ids (hid_t), -1: none
  std::unique_ptr<MrdDeclaredLengths> declared_;     // checked before each read allocates
  std::unique_ptr<MrdStreamReader> stream_;          // an MRD stream file (told by its first bytes)
  std::unique_ptr<Mrd2Reader> v2_;                   // an MRD 2 file
  void close() noexcept;
  bool readable(std::size_t i);  // read(i) succeeds and holds a spoke (not the zero fill of a torn tail)
  void leave_out_a_torn_tail();
};

}  // namespace radstream
