#include "core/error.hpp"
#include "fbp/fbp.hpp"

namespace radstream {

FbpFilter parse_fbp_filter(const std::string& name) {
  if (name == "ram-lak") return FbpFilter::RamLak;
  if (name == "shepp-logan") return FbpFilter::SheppLogan;
  if (name == "hann") return FbpFilter::Hann;
  throw ConfigError("FBP filter '" + name + "' is not one of ram-lak, shepp-logan, hann");
}

std::string to_string(FbpFilter f) {
  switch (f) {
    case FbpFilter::RamLak:
      return "ram-lak";
    case FbpFilter::SheppLogan:
      return "shepp-logan";
    case FbpFilter::Hann:
      return "hann";
  }
  return "ram-lak";
}

int fbp_fft_size(int samples) {
  int p = 1;
  while (p < 2 * samples) p *= 2;
  return p;
}

}  // namespace radstream
