#include "recon/memory_budget.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/error.hpp"
#include "gpu/cuda_runtime.hpp"
#include "recon/methods.hpp"
#include "recon/registry.hpp"

namespace radstream {

namespace {

constexpr double kComplex = StageSizes::kComplex, kReal = StageSizes::kReal;

std::string gib(double bytes) {
  return bytes >= 1 << 30 ? fmt::format("{:.2f} GiB", bytes / double(1 << 30))
                          : fmt::format("{:.0f} MiB", bytes / double(1 << 20));
}

// Upper bounds of the per-slice reconstruction memory: what the method declares (recon/methods.hpp: its
// stages' declarations in the registry, and its own), for the window's frame.
double recon_bytes_per_slice(const Registry& registry, const StreamHeader& h, const ReconParams& r,
                             int window, bool cuda) {
  StageSizes s;
  s.matrix = h.matrix;
  s.coils = h.coils;
  s.samples = h.samples;
  s.window = window;
  return method_bytes(registry, registry.method(r.method), s, r, cuda ? Backend::Cuda : Backend::Cpu);
}

double physical_ram() {
  const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? double(pages) * double(size) : 0;
}

}  // namespace

std::string MemoryNeed::describe() const {
  return fmt::format("spoke rings {}, reconstruction {} (host {}, GPU {})", gib(ring_bytes), gib(recon_bytes),
                     gib(host_bytes), gib(device_bytes));
}

MemoryNeed memory_need(const Registry& registry, const StreamHeader& h, const ReconParams& recon,
                       int max_window, int ring_margin, int slices, bool cuda) {
  MemoryNeed m;
  // A stack of stars: the ring holds every partition's spokes of a window; its z positions take P chains'
  // worth (one chain each, or one batch of P images whose stages hold P x the channels: the same bytes up to
  // the images; the one CG-SENSE solve over the volume holds about as much besides its spare maps and a
  // refresh's copy of the data, which are not counted), and a volume's window sorted on the host (the window,
  // the kz transform, the z positions' frames) is counted even where the GPU sorts it.
  const double P = std::max(1, h.partitions);
  const double slots = double(max_window) * P + ring_margin;
  m.ring_bytes = slices * slots * h.samples * (double(h.coils) * kComplex + 2 * kReal);
  m.recon_bytes = slices * P * recon_bytes_per_slice(registry, h, recon, max_window, cuda);
  const double volume_host =
      P > 1 ? slices * 3.0 * max_window * P * h.samples * (double(h.coils) * kComplex + 2 * kReal) : 0.0;
  m.host_bytes = m.ring_bytes + volume_host + (cuda ? 0 : m.recon_bytes);
  m.device_bytes = cuda ? m.ring_bytes + m.recon_bytes : 0;
  return m;
}

double parse_size(const std::string& text, const char* what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char ch) { return std::toupper(ch); });
  double scale = 0;
  if (unit == "K" || unit == "KIB" || unit == "KB") scale = 1 << 10;
  if (unit == "M" || unit == "MIB" || unit == "MB") scale = 1 << 20;
  if (unit == "G" || unit == "GIB" || unit == "GB") scale = double(1 << 30);
  if (unit == "T" || unit == "TIB" || unit == "TB") scale = double(1 << 30) * 1024;
  if (used == 0 || scale == 0 || !(v > 0) || !std::isfinite(v))
    throw ConfigError(
        fmt::format("{} = '{}' is not a size: auto, or a number with a unit (512M, 8G, 1.5T)", what, text));
  return v * scale;
}

MemoryLimit memory_limit(const std::string& text, const char* what, bool cuda, double auto_fraction) {
  MemoryLimit l;
  if (text != "auto") {
    l.host_bytes = l.device_bytes = parse_size(text, what);
    l.source = fmt::format("{} {}", what, text);
    return l;
  }
  const double ram = physical_ram();
  l.host_bytes = ram * auto_fraction;
  l.source = fmt::format(
      "{} auto: {} of the machine's {} RAM", what,
      auto_fraction == 0.5 ? std::string("half") : fmt::format("{:g} %", 100 * auto_fraction), gib(ram));
  if (cuda) {
    const double free = double(gpu::free_memory(0));
    l.device_bytes = 0.9 * free;
    if (free > 0) l.source += fmt::format(", 90 % of the GPU's {} free", gib(free));
  }
  return l;
}

std::string over_budget(const MemoryNeed& need, const MemoryLimit& limit) {
  if (limit.host_bytes > 0 && need.host_bytes > limit.host_bytes)
    return fmt::format("needs {} of host memory ({}); the limit is {} ({})", gib(need.host_bytes),
                       need.describe(), gib(limit.host_bytes), limit.source);
  if (limit.device_bytes > 0 && need.device_bytes > limit.device_bytes)
    return fmt::format("needs {} of GPU memory ({}); the limit is {} ({})", gib(need.device_bytes),
                       need.describe(), gib(limit.device_bytes), limit.source);
  return "";
}

}  // namespace radstream
