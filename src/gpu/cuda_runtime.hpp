// What the program needs to know about CUDA, in plain C++ (no CUDA types): is a GPU usable, and which.
#pragma once
#include <cstddef>
#include <string>

namespace radstream::gpu {

struct Availability {
  bool available = false;
  int device_count = 0;
  std::string device_name;  // of device 0
  std::string reason;       // why not, when not available
  int driver_version = 0;   // e.g. 13000
  int runtime_version = 0;
};

// Queries the CUDA runtime; any error (no driver, no device) means "no GPU". Never throws.
Availability query();

// Free memory of a device in bytes (cudaMemGetInfo on it); 0 when it cannot be asked. Never throws.
std::size_t free_memory(int device);

// True when the CUDA reconstruction stages are compiled into this build.
bool cuda_stages_built();

}  // namespace radstream::gpu
