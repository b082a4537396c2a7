#include "io/mrd_image_file.hpp"

#include <fmt/format.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.hpp"
#include "io/mrd2_images.hpp"

namespace radstream {

MrdImageWriter::MrdImageWriter(const std::string& path, const std::string& xml) : path_(path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  if (path.size() > 5 && path.ends_with(".mrd2")) {
    v2_ = std::make_unique<Mrd2ImageWriter>(path, xml);
    return;
  }
  try {
    ds_ = std::make_unique<ISMRMRD::Dataset>(path.c_str(), "dataset", true);
  } catch (const std::exception& e) {
    throw IoError(fmt::format("{}: cannot create the image file: {}", path, e.what()));
  }
}

MrdImageWriter::~MrdImageWriter() = default;

void MrdImageWriter::append(std::span<const std::byte> head, const std::string& attributes,
                            std::span<const std::byte> pixels) {
  if (v2_) {
    v2_->append(head, attributes, pixels);
    ++count_;
    return;
  }
  ISMRMRD::ISMRMRD_Image im;
  if (head.size() != sizeof im.head) throw IoError(fmt::format("{}: an image header is 198 bytes", path_));
  std::memcpy(&im.head, head.data(), sizeof im.head);
  std::vector<char> attr(attributes.begin(), attributes.end());
  attr.push_back('\0');
  im.head.attribute_string_len = std::uint32_t(attributes.size());
  im.attribute_string = attr.data();
  std::vector<std::byte> px(pixels.begin(), pixels.end());
  im.data = px.data();
  if (std::size_t(ISMRMRD::ismrmrd_size_of_image_data(&im)) != pixels.size())
    throw IoError(fmt::format("{}: image of {}x{}x{} x {} channels given {} pixel bytes", path_,
                              im.head.matrix_size[0], im.head.matrix_size[1], im.head.matrix_size[2],
                              im.head.channels, pixels.size()));
  try {
    ds_->appendImage(fmt::format("images_{}", im.head.image_series_index), &im);
  } catch (const std::exception& e) {
    throw IoError(fmt::format("{}: writing image {} failed: {}", path_, count_, e.what()));
  }
  ++count_;
}

}  // namespace radstream
