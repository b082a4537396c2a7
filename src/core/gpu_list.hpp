// One syntax for a list of GPUs, everywhere a command takes one (placement.gpus, run and demo --gpus, recon
// --gpus for the exact slices, bench-split --gpus): whole numbers >= 0 separated by commas and/or spaces
// ("0,1,2", "0 1 2", or repeated values of a list option). Empty: the command's default.
#pragma once
#include <string>
#include <vector>

namespace radstream {

// Throws ConfigError naming `what`, the item and the whole text when an item is not a GPU number, or (unless
// repeats) when a GPU is listed twice.
std::vector<int> parse_gpu_list(const std::string& text, const std::string& what, bool repeats = false);
std::vector<int> parse_gpu_list(const std::vector<std::string>& items, const std::string& what,
                                bool repeats = false);
// Throws ConfigError unless every GPU of the list exists (device_count devices).
void check_gpus_exist(const std::vector<int>& gpus, int device_count, const std::string& what);

}  // namespace radstream
