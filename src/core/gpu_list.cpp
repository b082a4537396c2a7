#include "core/gpu_list.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace radstream {

std::vector<int> parse_gpu_list(const std::string& text, const std::string& what, bool repeats) {
  std::vector<int> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find_first_of(", ", pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    int g = -1;
    std::size_t used = 0;
    try {
      g = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || g < 0)
      throw ConfigError(fmt::format("{}: '{}' in '{}' is not a GPU number", what, item, text));
    if (!repeats && std::find(out.begin(), out.end(), g) != out.end())
      throw ConfigError(fmt::format("{}: GPU {} is listed twice in '{}'", what, g, text));
    out.push_back(g);
  }
  return out;
}

std::vector<int> parse_gpu_list(const std::vector<std::string>& items, const std::string& what,
                                bool repeats) {
  std::string text;
  for (const auto& i : items) text += (text.empty() ? "" : " ") + i;
  return parse_gpu_list(text, what, repeats);
}

void check_gpus_exist(const std::vector<int>& gpus, int device_count, const std::string& what) {
  for (int g : gpus)
    if (g >= device_count)
      throw ConfigError(
          fmt::format("{}: GPU {} does not exist (this machine has {})", what, g, device_count));
}

}  // namespace radstream
