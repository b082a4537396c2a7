// One memory budget for what a stream header makes the receiver allocate: the spoke rings, and per slice the
// reconstruction's frames, grids, coil maps, plans and solver work for the configured method. It is summed
// from the header and the run's settings and checked before anything is allocated, so that a short header
// cannot take the machine's memory (a 1.3 KB header inside the per-field limits took a receiver past 8 GB).
// The sums are upper bounds of what the stages allocate (the test holds them against the measured peak).
#pragma once
#include <cstdint>
#include <string>

#include "core/stream_header.hpp"
#include "recon/recon_params.hpp"

namespace radstream {

class Registry;

struct MemoryNeed {
  double ring_bytes = 0;         // spoke rings (host, and their mirror on the GPU with the cuda backend)
  double recon_bytes = 0;        // the reconstruction of every slice (on the GPU with the cuda backend)
  double host_bytes = 0;         // what falls on the host
  double device_bytes = 0;       // what falls on the GPU
  std::string describe() const;  // "ring 1.2 GiB, reconstruction 9.3 GiB (host 1.3 GiB, GPU 10.5 GiB)"
};

// The reconstruction's part from the method's declarations (recon/methods.hpp) in `registry`.
MemoryNeed memory_need(const Registry& registry, const StreamHeader& h, const ReconParams& recon,
                       int max_window, int ring_margin, int slices, bool cuda);

struct MemoryLimit {
  double host_bytes = 0;    // 0: no limit
  double device_bytes = 0;  // 0: no limit (or no GPU)
  std::string source;       // "--memory-limit 8G" or "auto: half of 31.2 GiB RAM, 90 % of the GPU's 79.6 GiB"
};

// "auto" (half the machine's RAM; 90 % of the current GPU's memory with the cuda backend) or a size with a
// unit (512M, 8G, 1.5T; MiB/GiB spelled out too) that bounds both. Throws ConfigError naming `what` and the
// value when it cannot be read.
// auto_fraction: the share of the RAM "auto" stands for (a shared server's stream: a quarter, so that the
// host stays usable while it serves; an offline command: half).
MemoryLimit memory_limit(const std::string& text, const char* what, bool cuda, double auto_fraction = 0.5);
double parse_size(const std::string& text, const char* what);

// "" when `need` fits `limit`, else why not (naming the bigger part and the limit's source).
std::string over_budget(const MemoryNeed& need, const MemoryLimit& limit);

}  // namespace radstream
