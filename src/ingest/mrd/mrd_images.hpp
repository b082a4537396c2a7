// A reconstructed frame as an MRD image message (1022) for the client that sent its spokes: the ImageHeader
// filled from the frame and from the frame's last acquisition (position, directions, measurement uid, time
// stamps, table position and the slice/average/contrast/phase/repetition/set indices), the ismrmrdMeta
// attributes (DataRole, ImageProcessingHistory, WindowCenter, WindowWidth, the frame number, the latency, the
// method) and the pixels, x fastest. Magnitudes go as int16 scaled to 12 stored bits (what scanner image
// databases take; the scale is in the attribute ImageScale) or as float32; complex images (image_type 5,
// complex64) carry the frame's complex image (FrameResult::complex_image), or, for a frame without one (a
// coil shown in the viewer), its magnitude with a zero phase and the attribute PhaseKept 0.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stream/frame_result.hpp"
#include "stream/mrd_params.hpp"

namespace radstream {

struct MrdImageContext {
  std::array<std::byte, 340> last_acquisition{};  // the frame's last acquisition header (zeros: none)
  float fov_mm[3] = {256.f, 256.f, 10.f};
  std::uint16_t series = 1;  // one series per stream and method
  std::uint16_t index = 0;   // frames of the series, wrapping
  std::string method;
  double latency_ms = 0;  // the frame's last spoke arrived -> the image made
  // int16 pixels: the series' one scale (stored value = magnitude x scale, said in ImageScale), so that a
  // scanner's database sees one intensity scale for the whole series; 0: this frame's own (its peak at 4095).
  double scale = 0;
  // A volume (FrameResult::depth > 1) as one image per partition, as scanners store a 3D acquisition: this
  // partition's plane (slice = the partition, its centre moved along slice_dir from the volume's, the slab's
  // thickness divided among the partitions); -1: the whole volume as one 3D image.
  int partition = -1;
};

constexpr int kMrdStoredBits = 12;

// Encodes frames into whole messages (id included), ready to send. It keeps its scratch pixels, and `out`
// keeps its capacity, so that a stream of frames allocates (and page-faults) nothing per frame; the pixel
// conversion runs on a plain typed array (vectorized). One encoder per thread.
class MrdImageEncoder {
 public:
  void encode(const FrameResult& f, const MrdImageContext& c, MrdPixels pixels, std::vector<std::byte>& out);

 private:
  std::vector<std::int16_t> i16_;
  std::vector<float> f32_;
  std::vector<cfloat> c64_;
  std::string attrs_;
};

}  // namespace radstream
