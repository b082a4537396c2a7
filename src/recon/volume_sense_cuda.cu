#include "noncart/sense_operator_cuda.hpp"
#include "recon/volume_sense_solver.hpp"

namespace radstream {

std::unique_ptr<VolumeSense> make_volume_sense_cuda(const VolumeSenseShape& s, const CgSenseParams& p,
                                                    const NufftKernel& kernel, gpu::StreamRef stream) {
  auto op = std::make_unique<SenseOperatorCuda>(s.matrix, s.coils, s.points, kernel, p.toeplitz, stream,
                                                s.partitions);
  return std::make_unique<VolumeSenseSolver<SenseOperatorCuda>>(s, p, std::move(op),
                                                                make_vector_ops_cuda(stream));
}

}  // namespace radstream
