#include <sstream>

#include "core/log.hpp"
#include "linalg/finite_difference.hpp"
#include "noncart/sense_operator_cpu.hpp"
#include "stages/cg_sense/cg_sense_stage.hpp"

namespace radstream {

std::vector<int> cg_sense_split_gpus(const CgSenseParams& p) {
  std::vector<int> gpus;
  if (p.split_gpus.empty()) {
    for (int g = 0; g < p.split_parts; ++g) gpus.push_back(g);
    return gpus;
  }
  std::stringstream in(p.split_gpus);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    int g = -1;
    try {
      g = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || g < 0)
      throw ConfigError("recon.split_gpus = \"" + p.split_gpus + "\": \"" + item + "\" is not a GPU number");
    if (std::find(gpus.begin(), gpus.end(), g) != gpus.end())
      throw ConfigError("recon.split_gpus = \"" + p.split_gpus + "\" lists GPU " + item + " twice");
    gpus.push_back(g);
  }
  if (int(gpus.size()) != p.split_parts)
    throw ConfigError("recon.split_gpus = \"" + p.split_gpus + "\" lists " + std::to_string(gpus.size()) +
                      " GPUs for split_parts = " + std::to_string(p.split_parts));
  return gpus;
}

void log_cg_sense_split(std::size_t coils, int parts, double median_ms, double above_ms, bool split) {
  if (!split)
    log::info("cg_sense: one-device solve median {:.2f} ms <= split_above_ms {:.2f}: coils not split",
              median_ms, above_ms);
  else if (above_ms <= 0)
    log::info("cg_sense: {} coils split over {} partitions (split_above_ms = 0)", coils, parts);
  else
    log::info(
        "cg_sense: {} coils split over {} partitions (one-device solve median {:.2f} ms > split_above_ms "
        "{:.2f})",
        coils, parts, median_ms, above_ms);
}

std::unique_ptr<Stage> make_cg_sense_cpu(const CgSenseParams& p, const NufftKernel& kernel,
                                         FftPlanner planner) {
  return std::make_unique<CgSenseStage<SenseOperatorCpu>>(
      p, Location::Host,
      [p, kernel, planner](int N, int coils, std::size_t points, Context& ctx) {
        return std::make_unique<SenseOperatorCpu>(N, coils, points, kernel, p.toeplitz, ctx.threads, planner);
      },
      [](Context&) { return make_vector_ops_cpu(); },
      [](int N, Context&) -> std::unique_ptr<LinearOperator> {
        return std::make_unique<FiniteDifferenceCpu>(N);
      },
      [p, kernel](int N, int coils, std::size_t points, const CoilSplitOptions& o) {
        return make_coil_split_sense_cpu(N, coils, points, kernel, o, p.split_parts);
      });
}

}  // namespace radstream
