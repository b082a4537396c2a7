#include "io/bart_mrd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "io/mrd_check.hpp"
#include "io/mrd_file.hpp"

namespace radstream {

std::size_t write_frame_as_mrd(const std::string& path, const Frame& f, const BartToMrd& o) {
  if (o.repeat < 1) throw ConfigError(fmt::format("repeat {} must be >= 1", o.repeat));
  if (!(o.rate_hz > 0)) throw ConfigError(fmt::format("rate {} must be > 0", o.rate_hz));
  const Geometry& g = f.geometry;
  StreamHeader h;
  h.matrix = g.matrix;
  h.samples = g.samples;
  h.coils = g.coils;
  h.readout_os = float(g.samples) / float(g.matrix);
  h.fov_mm = o.fov_mm;
  h.angles.scheme = AngleScheme::Linear180;  // informative only: every acquisition carries its trajectory
  h.angles.spokes_per_rotation = g.spokes;
  h.spoke_rate_hz = o.rate_hz;
  h.validate();
  MrdWriter w(path, h);
  const std::size_t S = std::size_t(g.samples), P = std::size_t(g.spokes);
  std::uint64_t index = 0;
  for (int r = 0; r < o.repeat; ++r)
    for (std::size_t p = 0; p < P; ++p, ++index) {
      Spoke s;
      s.samples = g.samples;
      s.coils = g.coils;
      s.traj.assign(f.traj.data() + p * S * 2, f.traj.data() + (p + 1) * S * 2);
      s.data.resize(std::size_t(g.coils) * S);
      for (int c = 0; c < g.coils; ++c)
        std::copy_n(f.data.data() + (std::size_t(c) * P + p) * S, S, s.data.data() + std::size_t(c) * S);
      // The spoke's direction from its end points (the readout may run either way).
      const float* t = s.traj.data();
      s.header.angle = std::atan2(double(t[2 * (S - 1) + 1] - t[1]), double(t[2 * (S - 1)] - t[0]));
      s.header.spoke_index = index;
      s.header.scan_counter = std::uint32_t(index);
      s.header.acquired_ns = std::int64_t(double(index) * 1e9 / o.rate_hz);
      w.append(s);
    }
  return w.count();
}

MrdAsBart read_mrd_as_bart(const std::string& path, long start, long count) {
  check_mrd_in_child(path, start, count);  // a file that crashes HDF5 is refused, not a crash here
  MrdAsBart out;
  std::size_t samples = 0;
  visit_mrd(
      path, start, count,
      [&](const StreamHeader& h, std::size_t spokes) {
        if (spokes == 0) throw InputError(fmt::format("{}: no spokes from spoke {}", path, start));
        out.header = h;
        samples = std::size_t(h.samples);
        out.traj.dims = {3, long(samples), long(spokes)};
        out.traj.data.assign(3 * samples * spokes, cfloat{});
        out.kspace.dims = {1, long(samples), long(spokes), long(h.coils)};
        out.kspace.data.assign(samples * spokes * std::size_t(h.coils), cfloat{});
      },
      [&](std::size_t i, Spoke&& s) {
        const std::size_t spokes = std::size_t(out.traj.dims[2]);
        const float n = float(out.header.matrix > 0 ? out.header.matrix : 1);
        for (std::size_t j = 0; j < samples; ++j)
          for (int a = 0; a < 2; ++a)  // cycles per pixel -> BART units
            out.traj.data[3 * (i * samples + j) + std::size_t(a)] = {s.traj[2 * j + std::size_t(a)] * n, 0.f};
        for (int c = 0; c < s.coils; ++c)
          std::copy_n(s.data.data() + std::size_t(c) * samples, samples,
                      out.kspace.data.data() + (std::size_t(c) * spokes + i) * samples);
      });
  return out;
}

}  // namespace radstream
