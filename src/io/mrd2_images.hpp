// MRD images into an MRD 2 file (`replay --mrd ... --images-out OUT.mrd2`): the Header of the scan the images
// came from, then each image as the StreamItem of its pixel type (ImageUint16, ImageInt16, ImageUint32,
// ImageInt32, ImageFloat, ImageDouble, ImageComplexFloat, ImageComplexDouble), its MRD v1 header mapped as
// ismrmrd/mrd's converters map it (read_dir -> colDir, phase_dir -> lineDir, time stamps ms -> ns) and its
// attribute XML as the ImageMeta map (each value an int64, a float64 or a string, as its text reads). Each
// image is written as a block of its own and flushed, so the file holds every image received so far.
#pragma once
#include <cstdio>
#include <span>
#include <string>

#include "io/yardl_schema.hpp"

namespace radstream {

class Mrd2ImageWriter {
 public:
  // xml: the scan's MRD v1 header ("" writes none). Throws IoError naming the file.
  Mrd2ImageWriter(const std::string& path, const std::string& xml);
  ~Mrd2ImageWriter();  // writes the stream's end
  Mrd2ImageWriter(const Mrd2ImageWriter&) = delete;
  Mrd2ImageWriter& operator=(const Mrd2ImageWriter&) = delete;
  // head: the 198-byte MRD v1 ImageHeader; pixels: its data (sizes checked). Throws IoError.
  void append(std::span<const std::byte> head, const std::string& attributes,
              std::span<const std::byte> pixels);

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  void write(const std::vector<std::byte>& b);
};

namespace mrd2 {
// An MRD v1 attribute string (<ismrmrdMeta><meta><name/><value/>...</meta></ismrmrdMeta>) as MRD 2's
// ImageMeta.
yardl::Value image_meta(const std::string& attributes);
}  // namespace mrd2

}  // namespace radstream
