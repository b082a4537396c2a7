#include "recon/volume_sense.hpp"

#include "noncart/sense_operator_cpu.hpp"
#include "recon/volume_sense_solver.hpp"

namespace radstream {

std::string volume_sense_refusal(const CgSenseParams& p) {
  if (!p.joint_volume) return "recon.cg.joint_volume is false";
  if (p.smoothness > 0) return "smoothness > 0 (the smoothness penalty is a per-partition one)";
  if (p.deadline_ms > 0) return "deadline_ms > 0 (the volume's iterations are a fixed count)";
  if (p.split_parts > 1) return "split_parts > 1 (the coil split is a per-partition one)";
  return {};
}

std::unique_ptr<VolumeSense> make_volume_sense_cpu(const VolumeSenseShape& s, const CgSenseParams& p,
                                                   const NufftKernel& kernel, int threads) {
  auto op = std::make_unique<SenseOperatorCpu>(s.matrix, s.coils, s.points, kernel, p.toeplitz, threads,
                                               FftPlanner::Estimate, s.partitions);
  return std::make_unique<VolumeSenseSolver<SenseOperatorCpu>>(s, p, std::move(op), make_vector_ops_cpu());
}

}  // namespace radstream
