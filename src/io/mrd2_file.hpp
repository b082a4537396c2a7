// MRD 2 binary files (ismrmrd/mrd 2.2.1, yardl's compact binary encoding: io/yardl_binary.hpp): the magic
// "yardl", the encoding version 1, the protocol schema (refused unless it is MRD 2.2.1's, naming the release
// it is), the optional Header, then a stream of StreamItem unions in blocks. radstream reads acquisitions in
// MRD v1 terms (the 340-byte header, [samples][dims] trajectory, [coils][samples] data), so everything that
// reads an MRD file (replay, recon --input, convert) reads MRD 2 as well; other items (waveforms, images,
// Pulseq, intermediate data) are passed over and counted.
//
// The acquisition header both ways, as ismrmrd/mrd's own converters map it (cpp/mrd-tools/converters.cc):
// time stamps in ms (v1) <-> ns (v2); the channel mask's set bits <-> channelOrder; available_channels = the
// coils; sample_time_us <-> sampleTimeNs, rounded to the nearest ns (the converters truncate, which loses a
// float such as 1.7 us); every encoding counter, discard, centre sample and space reference written present.
// v2 fields v1 has no place for (acquisitionCenterFrequency, a phase array, more than 8 user values or 3
// physiology stamps) are refused when read into v1 terms, naming the field, rather than dropped.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/mrd_raw.hpp"
#include "io/yardl_schema.hpp"

namespace radstream {

class Mrd2Reader {
 public:
  explicit Mrd2Reader(const std::string& path);  // throws IoError naming the file and the byte
  ~Mrd2Reader();
  Mrd2Reader(const Mrd2Reader&) = delete;
  Mrd2Reader& operator=(const Mrd2Reader&) = delete;
  const std::string& xml() const { return xml_; }  // the Header as MRD v1 XML
  const yardl::Value& header() const { return header_; }
  std::size_t count() const { return offsets_.size(); }
  RawSpoke read(std::size_t i);
  std::size_t skipped() const { return skipped_; }

 private:
  std::string path_, xml_;
  yardl::Value header_;
  std::FILE* f_ = nullptr;
  std::unique_ptr<yardl::Input> in_;
  std::vector<std::uint64_t> offsets_;  // where each acquisition's value starts (after its union index)
  std::size_t skipped_ = 0;
  void index(const yardl::Schema& schema);
};

// Writes an MRD 2 file: the Header from the v1 XML (refused naming the element when MRD 2 lacks a required
// field), acquisitions from v1 terms, in blocks written at flush() and at the end (a file cut off after a
// flush reads up to that flush).
class Mrd2Writer {
 public:
  Mrd2Writer(const std::string& path, const std::string& xml);  // throws IoError
  ~Mrd2Writer();                                                // writes the stream's end
  Mrd2Writer(const Mrd2Writer&) = delete;
  Mrd2Writer& operator=(const Mrd2Writer&) = delete;
  void append(std::span<const std::byte> acq_header, std::span<const float> traj,
              std::span<const cfloat> data);
  void flush();  // throws IoError (disk full)
  void abandon() { abandoned_ = true; }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  std::vector<std::byte> block_;
  std::size_t in_block_ = 0;
  bool abandoned_ = false;
};

namespace mrd2 {
// The file's start: magic, encoding version, the 2.2.1 schema, the Header from v1 XML (none when xml is
// empty).
void write_preamble(yardl::Output& out, const std::string& xml, const std::string& context);
// One acquisition in MRD v1 terms <-> its MRD 2 encoding (the Acquisition record, without the union index).
void encode_acquisition(std::span<const std::byte> acq_header, std::span<const float> traj,
                        std::span<const cfloat> data, yardl::Output& out);
// keep = false checks the acquisition and passes over its data and trajectory (an index of a file).
RawSpoke decode_acquisition(yardl::Input& in, bool keep = true);
}  // namespace mrd2

}  // namespace radstream
