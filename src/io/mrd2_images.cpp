#include "io/mrd2_images.hpp"

#include <fmt/format.h>
#include <ismrmrd/ismrmrd.h>

#include <cerrno>
#include <cstring>
#include <pugixml.hpp>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/mrd2_file.hpp"
#include "io/mrd2_schema.hpp"

namespace radstream {

namespace {

using ImageHead = ISMRMRD::ISMRMRD_ImageHeader;

// The StreamItem case of each MRD v1 pixel type (ISMRMRD_USHORT = 1 .. ISMRMRD_CXDOUBLE = 8) and its size.
struct PixelKind {
  std::uint64_t item;
  std::size_t bytes;
};

PixelKind pixel_kind(std::uint16_t data_type, const std::string& path) {
  switch (data_type) {
    case ISMRMRD::ISMRMRD_USHORT:
      return {3, 2};
    case ISMRMRD::ISMRMRD_SHORT:
      return {4, 2};
    case ISMRMRD::ISMRMRD_UINT:
      return {5, 4};
    case ISMRMRD::ISMRMRD_INT:
      return {6, 4};
    case ISMRMRD::ISMRMRD_FLOAT:
      return {7, 4};
    case ISMRMRD::ISMRMRD_DOUBLE:
      return {8, 8};
    case ISMRMRD::ISMRMRD_CXFLOAT:
      return {9, 8};
    case ISMRMRD::ISMRMRD_CXDOUBLE:
      return {10, 16};
    default:
      throw IoError(
          fmt::format("{}: an image of MRD data type {}, which MRD 2 has no item for", path, data_type));
  }
}

yardl::Value vec3(const float* v) {
  return yardl::Value{{"dims", {3}}, {"data", {v[0], v[1], v[2]}}};
}

yardl::Value image_header(const ImageHead& h) {
  yardl::Value v = yardl::Value::object();
  v["flags"] = h.flags;
  v["measurementUid"] = h.measurement_uid;
  v["fieldOfView"] = vec3(h.field_of_view);
  v["position"] = vec3(h.position);
  v["colDir"] = vec3(h.read_dir);
  v["lineDir"] = vec3(h.phase_dir);
  v["sliceDir"] = vec3(h.slice_dir);
  v["patientTablePosition"] = vec3(h.patient_table_position);
  v["average"] = h.average;
  v["slice"] = h.slice;
  v["contrast"] = h.contrast;
  v["phase"] = h.phase;
  v["repetition"] = h.repetition;
  v["set"] = h.set;
  v["acquisitionTimeStampNs"] = std::uint64_t(h.acquisition_time_stamp) * 1000000;
  v["physiologyTimeStampNs"] = yardl::Value::array();
  for (std::uint32_t p : h.physiology_time_stamp)
    v["physiologyTimeStampNs"].push_back(std::uint64_t(p) * 1000000);
  v["imageType"] = std::int64_t(h.image_type);
  v["imageIndex"] = h.image_index;
  v["imageSeriesIndex"] = h.image_series_index;
  v["userInt"] = yardl::Value::array();
  for (std::int32_t u : h.user_int) v["userInt"].push_back(u);
  v["userFloat"] = yardl::Value::array();
  for (float u : h.user_float) v["userFloat"].push_back(u);
  return v;
}

// MRD 2's integer pixel types are varints (zig-zag for the signed ones); the others are raw little-endian.
template <typename T>
void put_ints(yardl::Output& out, std::span<const std::byte> pixels) {
  for (std::size_t k = 0; k < pixels.size() / sizeof(T); ++k) {
    T v;
    std::memcpy(&v, pixels.data() + k * sizeof(T), sizeof(T));
    if constexpr (std::is_signed_v<T>)
      out.svarint(v);
    else
      out.varint(v);
  }
}

}  // namespace

namespace mrd2 {

yardl::Value image_meta(const std::string& attributes) {
  yardl::Value m = yardl::Value::array();
  if (attributes.empty()) return m;
  pugi::xml_document doc;
  if (!doc.load_string(attributes.c_str())) throw IoError("an image's attribute string is not XML");
  for (pugi::xml_node meta : doc.child("ismrmrdMeta").children("meta")) {
    yardl::Value values = yardl::Value::array();
    for (pugi::xml_node v : meta.children("value")) {
      const std::string t = v.text().as_string();
      char* end = nullptr;
      errno = 0;
      const long long i = std::strtoll(t.c_str(), &end, 10);
      if (!t.empty() && *end == '\0' && errno == 0) {
        values.push_back({{"int64", std::int64_t(i)}});
        continue;
      }
      const double d = std::strtod(t.c_str(), &end);
      if (!t.empty() && *end == '\0')
        values.push_back({{"float64", d}});
      else
        values.push_back({{"string", t}});
    }
    m.push_back(yardl::Value::array({meta.child("name").text().as_string(), std::move(values)}));
  }
  return m;
}

}  // namespace mrd2

Mrd2ImageWriter::Mrd2ImageWriter(const std::string& path, const std::string& xml) : path_(path) {
  std::vector<std::byte> b;
  yardl::Output out(b);
  mrd2::write_preamble(out, xml, path);
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) throw IoError(fmt::format("{}: cannot create the image file: {}", path, std::strerror(errno)));
  write(b);
}

void Mrd2ImageWriter::write(const std::vector<std::byte>& b) {
  if (std::fwrite(b.data(), 1, b.size(), f_) != b.size() || std::fflush(f_) != 0)
    throw IoError(fmt::format("{}: cannot write: {}", path_, std::strerror(errno)));
}

void Mrd2ImageWriter::append(std::span<const std::byte> head, const std::string& attributes,
                             std::span<const std::byte> pixels) {
  ImageHead h;
  if (head.size() != sizeof h) throw IoError(fmt::format("{}: an image header is 198 bytes", path_));
  std::memcpy(&h, head.data(), sizeof h);
  const PixelKind kind = pixel_kind(h.data_type, path_);
  const std::uint64_t x = h.matrix_size[0], y = h.matrix_size[1], z = h.matrix_size[2], c = h.channels;
  if (x * y * z * c * kind.bytes != pixels.size())
    throw IoError(fmt::format("{}: image of {}x{}x{} x {} channels given {} pixel bytes", path_, x, y, z, c,
                              pixels.size()));
  std::vector<std::byte> b;
  yardl::Output out(b);
  out.varint(1);  // a block of one item
  out.varint(kind.item);
  const yardl::Schema& s = mrd2::schema();
  s.write("Mrd.ImageHeader", image_header(h), out);
  for (std::uint64_t d : {c, z, y, x}) out.varint(d);  // ImageData: [channel][z][y][x], x fastest as in v1
  switch (h.data_type) {
    case ISMRMRD::ISMRMRD_USHORT:
      put_ints<std::uint16_t>(out, pixels);
      break;
    case ISMRMRD::ISMRMRD_SHORT:
      put_ints<std::int16_t>(out, pixels);
      break;
    case ISMRMRD::ISMRMRD_UINT:
      put_ints<std::uint32_t>(out, pixels);
      break;
    case ISMRMRD::ISMRMRD_INT:
      put_ints<std::int32_t>(out, pixels);
      break;
    default:
      out.bytes(pixels.data(), pixels.size());
  }
  s.write("Mrd.ImageMeta", mrd2::image_meta(attributes), out);
  write(b);
}

Mrd2ImageWriter::~Mrd2ImageWriter() {
  if (!f_) return;
  const unsigned char end = 0;
  if (std::fwrite(&end, 1, 1, f_) != 1 || std::fflush(f_) != 0)
    log::error("{}: cannot write the end of the MRD 2 stream: {}", path_, std::strerror(errno));
  std::fclose(f_);
}

}  // namespace radstream
