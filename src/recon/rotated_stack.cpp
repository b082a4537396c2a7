#include "recon/rotated_stack.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/magnitude.hpp"
#include "iter/conjugate_gradient.hpp"
#include "linalg/vector_ops.hpp"
#include "noncart/density_weights.hpp"
#include "noncart/sense_operator_3d.hpp"
#include "recon/bart_nufft.hpp"

namespace radstream {

namespace {

// The density weights [spokes][samples] of every spoke, each partition's from its own in-plane spokes (BART
// units / N: cycles per pixel).
std::vector<float> partition_weights(const StackLayout& l, const CflArray& traj, int matrix, DcfMethod dcf) {
  const long S = l.samples, spokes = traj.dim(2);
  std::vector<float> w(std::size_t(S * spokes), 1.f);
  for (const auto& rows : l.spokes_of) {
    if (rows.empty()) continue;
    std::vector<float> plane(rows.size() * std::size_t(S) * 2), pw(rows.size() * std::size_t(S));
    for (std::size_t j = 0; j < rows.size(); ++j)
      for (long s = 0; s < S; ++s)
        for (int d = 0; d < 2; ++d)
          plane[(j * std::size_t(S) + std::size_t(s)) * 2 + std::size_t(d)] =
              traj.data[std::size_t(3 * (S * rows[j] + s) + d)].real() / float(matrix);
    compute_density_weights(dcf, plane, int(rows.size()), int(S), pw);
    for (std::size_t j = 0; j < rows.size(); ++j)
      for (long s = 0; s < S; ++s) w[std::size_t(S * rows[j] + s)] = pw[j * std::size_t(S) + std::size_t(s)];
  }
  return w;
}

// The coils of kspace (BART [1 samples spokes coils]) for traj's samples and spokes, checked whole and
// finite.
long checked_coils(const CflArray& traj, const CflArray& kspace, long S, const std::string& what) {
  const long spokes = traj.dim(2);
  const long C = long(kspace.data.size()) / std::max(1L, S * spokes);
  if (kspace.dim(0) != 1 || kspace.dim(1) != S || kspace.dim(2) != spokes ||
      C * S * spokes != long(kspace.data.size()) || C < 1)
    throw IoError(
        fmt::format("{}: k-space dimensions [{}] do not match the trajectory's {} samples x {} spokes "
                    "(expected [1 {} {} coils])",
                    what, fmt::join(kspace.dims, " "), S, spokes, S, spokes));
  for (std::size_t i = 0; i < kspace.data.size(); ++i)
    if (!std::isfinite(kspace.data[i].real()) || !std::isfinite(kspace.data[i].imag()))
      throw IoError(fmt::format("{}: k-space value {} is NaN or Inf", what, i));
  return C;
}

std::vector<cfloat> magnitude(const std::vector<cfloat>& x) {
  std::vector<cfloat> m(x.size());
  magnitude_image(x.data(), x.size(), m.data());
  return m;
}

}  // namespace

std::vector<cfloat> rotated_stack_gridding(const StackLayout& l, const CflArray& traj, const CflArray& kspace,
                                           int matrix, const ReconParams& p, const std::string& what) {
  const long S = l.samples, spokes = traj.dim(2), P = l.partitions;
  const long C = checked_coils(traj, kspace, S, what);
  // Unsampled partitions are zeros; the plan takes every sampled spoke at its own kz.
  const std::vector<float> w = partition_weights(l, traj, matrix, p.density.method);
  std::vector<cfloat> weighted(kspace.data.size());
  for (long c = 0; c < C; ++c)
    for (long i = 0; i < S * spokes; ++i)
      weighted[std::size_t(c * S * spokes + i)] =
          kspace.data[std::size_t(c * S * spokes + i)] * w[std::size_t(i)];
  return adjoint_rss(traj.data, weighted, int(C), {matrix, matrix, int(P)}, p, what);
}

std::vector<cfloat> rotated_stack_cg_sense(const StackLayout& l, const CflArray& traj, const CflArray& kspace,
                                           int matrix, const std::vector<HostBuffer<cfloat>>& maps,
                                           const ReconParams& p, const std::string& what) {
  if (p.cg.smoothness > 0 || p.cg.deadline_ms > 0 || p.cg.split_parts > 1)
    throw ConfigError(
        "cg-sense over partitions rotated against each other takes --iterations and --lambda only (no "
        "--smoothness, --deadline-ms or --split-parts)");
  const long S = l.samples, spokes = traj.dim(2), P = l.partitions, N = matrix;
  const long C = checked_coils(traj, kspace, S, what);
  if (long(maps.size()) != P)
    throw ConfigError(fmt::format("{}: {} coil-map partitions for {}", what, maps.size(), P));
  const std::size_t plane = std::size_t(N * N), voxels = plane * std::size_t(P),
                    points = std::size_t(S * spokes);
  // Cycles per pixel [points][3]: in plane over N, kz over P.
  std::vector<float> k(points * 3);
  for (std::size_t i = 0; i < points; ++i) {
    k[3 * i] = traj.data[3 * i].real() / float(N);
    k[3 * i + 1] = traj.data[3 * i + 1].real() / float(N);
    k[3 * i + 2] = traj.data[3 * i + 2].real() / float(P);
  }
  // Maps [coils][z][y][x] and their peak power (max over voxels of sum_c |S_c|^2).
  std::vector<cfloat> m(std::size_t(C) * voxels);
  std::vector<double> power(voxels, 0.0);
  for (long z = 0; z < P; ++z)
    for (long c = 0; c < C; ++c)
      for (std::size_t i = 0; i < plane; ++i) {
        const cfloat v = maps[std::size_t(z)][std::size_t(c) * plane + i];
        m[std::size_t(c) * voxels + std::size_t(z) * plane + i] = v;
        power[std::size_t(z) * plane + i] += std::norm(v);
      }
  const double peak = *std::max_element(power.begin(), power.end());
  SenseOperator3dCpu op({int(N), int(N), int(P)}, int(C), points, p.gridding.kernel());
  op.set_maps(m.data());
  op.set_points(k.data());
  std::vector<cfloat> b(voxels), x(voxels);
  op.adjoint(kspace.data.data(), b.data());
  const auto ops = make_vector_ops_cpu();
  ConjugateGradient cg(voxels, *ops, false);
  CgOptions o;
  o.max_iterations = p.cg.iterations;
  o.lambda = p.cg.lambda * double(points) * peak;  // relative, as cg-sense's (stages/cg_sense/cg_sense.hpp)
  const CgReport rep = cg.solve(op, b.data(), x.data(), o, false);
  log::info("cg-sense through the 3D SENSE operator (CPU): {} iterations, relative residual {:.3g}",
            rep.iterations, rep.residual);
  return magnitude(x);
}

}  // namespace radstream
