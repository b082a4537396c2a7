#include "ingest/mrd/mrd_images.hpp"

#include <fmt/format.h>
#include <ismrmrd/ismrmrd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "io/mrd_protocol.hpp"

namespace radstream {
namespace {

// The pixel passes over the real parts of an interleaved complex array, each a plain loop on restrict
// pointers that the compiler vectorizes (the peak with eight running maxima: one would chain every compare).
// Before, written on the complex type, they took ~0.4 ms of a 256^2 frame's encoding.
[[gnu::noinline]] float peak_of_real(const float* __restrict src, std::size_t n) {
  float m[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int q = 0; q < 8; ++q) m[q] = std::max(m[q], src[2 * (i + std::size_t(q))]);
  for (; i < n; ++i) m[0] = std::max(m[0], src[2 * i]);
  float peak = 0.f;
  for (float v : m) peak = std::max(peak, v);
  return peak;
}

[[gnu::noinline]] void real_to_int16(const float* __restrict src, std::size_t n, float scale, int top,
                                     std::int16_t* __restrict out) {
  for (std::size_t i = 0; i < n; ++i) {
    const int v = int(src[2 * i] * scale + 0.5f);  // rounded (magnitudes are not negative)
    out[i] = std::int16_t(std::clamp(v, 0, top));
  }
}

[[gnu::noinline]] void real_parts(const float* __restrict src, std::size_t n, float* __restrict out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = src[2 * i];
}

// Text as XML character data: &, < and > escaped (names and values are plain words and numbers here).
void append_xml_text(std::string& out, std::string_view text) {
  for (char ch : text) {
    if (ch == '&')
      out += "&amp;";
    else if (ch == '<')
      out += "&lt;";
    else if (ch == '>')
      out += "&gt;";
    else
      out += ch;
  }
}

}  // namespace

void MrdImageEncoder::encode(const FrameResult& f, const MrdImageContext& c, MrdPixels pixels,
                             std::vector<std::byte>& out) {
  ISMRMRD::ISMRMRD_AcquisitionHeader a;
  std::memcpy(&a, c.last_acquisition.data(), sizeof a);
  ISMRMRD::ISMRMRD_ImageHeader h;
  ISMRMRD::ismrmrd_init_image_header(&h);
  const bool int16 = pixels == MrdPixels::Int16, complex = pixels == MrdPixels::Complex;
  h.data_type = int16 ? ISMRMRD::ISMRMRD_SHORT : complex ? ISMRMRD::ISMRMRD_CXFLOAT : ISMRMRD::ISMRMRD_FLOAT;
  h.image_type = complex ? ISMRMRD::ISMRMRD_IMTYPE_COMPLEX : ISMRMRD::ISMRMRD_IMTYPE_MAGNITUDE;
  h.matrix_size[0] = std::uint16_t(f.matrix);
  h.matrix_size[1] = std::uint16_t(f.matrix);
  const int depth = std::max(1, f.depth);
  const bool plane = c.partition >= 0 && depth > 1;     // one partition of a volume
  h.matrix_size[2] = std::uint16_t(plane ? 1 : depth);  // a stack of stars' volume: one 3D image
  h.channels = 1;
  std::copy(c.fov_mm, c.fov_mm + 3, h.field_of_view);
  if (plane) h.field_of_view[2] = c.fov_mm[2] / float(depth);
  h.measurement_uid = a.measurement_uid;
  std::copy(a.position, a.position + 3, h.position);
  std::copy(a.read_dir, a.read_dir + 3, h.read_dir);
  std::copy(a.phase_dir, a.phase_dir + 3, h.phase_dir);
  std::copy(a.slice_dir, a.slice_dir + 3, h.slice_dir);
  std::copy(a.patient_table_position, a.patient_table_position + 3, h.patient_table_position);
  h.average = a.idx.average;
  h.slice = a.idx.slice;
  h.contrast = a.idx.contrast;
  h.phase = a.idx.phase;
  h.repetition = a.idx.repetition;
  h.set = a.idx.set;
  if (plane) {  // its centre: the volume's, moved along slice_dir by its distance from the middle partition
    h.slice = std::uint16_t(c.partition);
    const float off = (float(c.partition) - 0.5f * float(depth - 1)) * h.field_of_view[2];
    for (int i = 0; i < 3; ++i) h.position[i] += off * h.slice_dir[i];
  }
  h.acquisition_time_stamp = a.acquisition_time_stamp;
  std::copy(a.physiology_time_stamp, a.physiology_time_stamp + 3, h.physiology_time_stamp);
  h.image_index = c.index;
  h.image_series_index = c.series;

  const std::size_t all = std::size_t(f.matrix) * std::size_t(f.matrix) * std::size_t(h.matrix_size[2]);
  const std::size_t first = plane ? all * std::size_t(c.partition) : 0;  // the partition's first pixel
  const std::size_t n = std::min(all, f.image.size() - std::min(first, f.image.size()));
  const float* interleaved = reinterpret_cast<const float*>(f.image.data() + first);  // complex: re, im
  const float peak = peak_of_real(interleaved, n);
  const double scale = c.scale > 0  ? c.scale
                       : peak > 0.f ? double((1 << kMrdStoredBits) - 1) / double(peak)
                                    : 1.0;
  const std::size_t pixel_bytes = all * (int16 ? 2 : complex ? 8 : 4);
  const bool phase = complex && f.complex_image.size() >= first + n;

  // The ismrmrdMeta attributes, written straight into a kept string (the same XML ISMRMRD::serialize writes;
  // its MetaContainer and stream cost a fifth of the encoding).
  std::string& attrs = attrs_;
  attrs.assign("<?xml version=\"1.0\"?>\n<ismrmrdMeta>");
  const auto add = [&attrs](std::string_view name, std::initializer_list<std::string_view> values) {
    attrs += "<meta><name>";
    append_xml_text(attrs, name);
    attrs += "</name>";
    for (std::string_view v : values) {
      attrs += "<value>";
      append_xml_text(attrs, v);
      attrs += "</value>";
    }
    attrs += "</meta>";
  };
  const auto num = [](auto v) { return fmt::format("{}", v); };
  const double top = int16 ? double((1 << kMrdStoredBits) - 1) : double(peak);
  add("DataRole", {"Image"});
  add("ImageProcessingHistory", {"RADSTREAM", c.method});
  add("WindowCenter", {num(std::lround(top / 2))});
  add("WindowWidth", {num(std::lround(std::max(1.0, top)))});
  add("ImageScale", {fmt::format("{:.17g}", int16 ? scale : 1.0)});  // full precision
  add("FrameNumber", {num(f.number)});
  add("FirstSpoke", {num(f.first_spoke)});
  add("LastSpoke", {num(f.last_spoke)});
  add("Window", {num(f.window)});
  add("LatencyMs", {fmt::format("{:.3f}", c.latency_ms)});
  add("Method", {c.method});
  if (complex) add("PhaseKept", {phase ? "1" : "0"});
  if (plane) add("Partition", {num(c.partition), num(depth)});
  attrs += "</ismrmrdMeta>\n";

  // The pixels converted in a typed scratch array (no aliasing: the compiler vectorizes it), then one copy
  // into the reused message buffer.
  const void* src = nullptr;
  if (int16) {
    i16_.resize(all);  // kept frame after frame: no zero fill of the pixels overwritten below
    std::fill(i16_.begin() + std::ptrdiff_t(n), i16_.end(), std::int16_t(0));
    real_to_int16(interleaved, n, float(scale), (1 << kMrdStoredBits) - 1, i16_.data());
    src = i16_.data();
  } else if (complex) {
    c64_.resize(all);
    std::fill(c64_.begin() + std::ptrdiff_t(n), c64_.end(), cfloat(0.f, 0.f));
    const std::vector<cfloat>& from = phase ? f.complex_image : f.image;
    std::copy(from.begin() + std::ptrdiff_t(first), from.begin() + std::ptrdiff_t(first + n), c64_.begin());
    src = c64_.data();
  } else {
    f32_.resize(all);
    std::fill(f32_.begin() + std::ptrdiff_t(n), f32_.end(), 0.f);
    real_parts(interleaved, n, f32_.data());
    src = f32_.data();
  }
  out.clear();  // its capacity stays: one copy of the pixels, no zero fill
  mrd::append_image(out, std::span(reinterpret_cast<const std::byte*>(&h), sizeof h), attrs,
                    std::span(static_cast<const std::byte*>(src), pixel_bytes));
}

}  // namespace radstream
