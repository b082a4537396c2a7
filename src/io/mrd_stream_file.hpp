// MRD stream files: the MRD streaming protocol's messages (io/mrd_protocol.hpp) in a file, as
// siemens_to_ismrmrd 1.3 and ISMRMRD's ismrmrd_hdf5_to_stream write them and BART's `ismrmrd --stream` and
// Gadgetron's --from_stream read them: optional 1/2/5, then 3 (the XML header), then acquisitions and
// waveforms in time order, then 4. What a file is comes from its first bytes, never its extension (`.mrd` is
// also what older converters give HDF5 files): the HDF5 signature, an MRD stream's first message id, or
// yardl's magic (MRD 2).
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/mrd_raw.hpp"

namespace radstream {

enum class MrdFileKind { Hdf5, Stream, Mrd2 };

// Throws IoError naming the file: missing or unreadable, or none of the three formats (Mrd2: yardl's magic,
// an MRD 2 binary file, io/mrd2_file.hpp).
MrdFileKind sniff_mrd_file(const std::string& path);

// Reads a stream file's acquisitions by index: one pass at opening records where each acquisition starts
// (every length checked by the codec); read(i) seeks there. A file that ends inside a message (a recording
// cut short) keeps the acquisitions before it, with a warning; one without a close is fine.
class MrdStreamReader {
 public:
  explicit MrdStreamReader(const std::string& path);  // throws IoError naming the file and the offset
  ~MrdStreamReader();
  MrdStreamReader(const MrdStreamReader&) = delete;
  MrdStreamReader& operator=(const MrdStreamReader&) = delete;
  const std::string& xml() const { return xml_; }
  std::size_t count() const { return offsets_.size(); }
  RawSpoke read(std::size_t i);
  std::size_t skipped() const { return skipped_; }  // waveforms, images, texts, NDArrays passed over

 private:
  std::string path_, xml_;
  std::FILE* f_ = nullptr;
  std::vector<std::uint64_t> offsets_;  // of each acquisition message's id
  std::size_t skipped_ = 0;
};

// Writes a stream file: the XML header first (as Gadgetron's and BART's readers require), acquisitions as
// they come, the close at the end (a file without it, from a killed recorder, still reads).
class MrdStreamWriter {
 public:
  MrdStreamWriter(const std::string& path, const std::string& xml);  // throws IoError
  ~MrdStreamWriter();                                                // writes the close
  MrdStreamWriter(const MrdStreamWriter&) = delete;
  MrdStreamWriter& operator=(const MrdStreamWriter&) = delete;
  void append(std::span<const std::byte> acq_header, std::span<const float> traj,
              std::span<const cfloat> data);
  void flush();  // throws IoError (disk full)
  void abandon() { abandoned_ = true; }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  std::vector<std::byte> buf_;
  std::size_t count_ = 0;
  bool abandoned_ = false;
};

}  // namespace radstream
