// MRD images into an HDF5 file (the images an MRD server sent back: `replay --mrd ... --images-out OUT.h5`;
// OUT.mrd2 writes MRD 2, io/mrd2_images.hpp), as ISMRMRD's own tools store them: one image group per series
// ("images_<series>"), header, attributes and pixels as received.
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace ISMRMRD {
class Dataset;
}

namespace radstream {

class Mrd2ImageWriter;

class MrdImageWriter {
 public:
  // Creates (or replaces) the file: HDF5, or an MRD 2 file when the name ends in .mrd2 (io/mrd2_images.hpp,
  // headed by `xml`, the scan's header). Throws IoError naming it.
  explicit MrdImageWriter(const std::string& path, const std::string& xml = {});
  ~MrdImageWriter();
  MrdImageWriter(const MrdImageWriter&) = delete;
  MrdImageWriter& operator=(const MrdImageWriter&) = delete;
  // `head`: the 198-byte ImageHeader; `pixels`: its data (sizes checked). Throws IoError.
  void append(std::span<const std::byte> head, const std::string& attributes,
              std::span<const std::byte> pixels);
  std::size_t count() const { return count_; }

 private:
  std::string path_;
  std::unique_ptr<ISMRMRD::Dataset> ds_;
  std::unique_ptr<Mrd2ImageWriter> v2_;
  std::size_t count_ = 0;
};

}  // namespace radstream
