#include "recon/rotated_stack.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "noncart/density_weights.hpp"
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

}  // namespace

std::vector<cfloat> rotated_stack_gridding(const StackLayout& l, const CflArray& traj, const CflArray& kspace,
                                           int matrix, const ReconParams& p, const std::string& what) {
  const long S = l.samples, spokes = traj.dim(2), P = l.partitions;
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
  // Unsampled partitions are zeros; the plan takes every sampled spoke at its own kz.
  const std::vector<float> w = partition_weights(l, traj, matrix, p.density.method);
  std::vector<cfloat> weighted(kspace.data.size());
  for (long c = 0; c < C; ++c)
    for (long i = 0; i < S * spokes; ++i)
      weighted[std::size_t(c * S * spokes + i)] =
          kspace.data[std::size_t(c * S * spokes + i)] * w[std::size_t(i)];
  BartNufftOptions o;
  o.width = p.gridding.width;
  o.oversampling = p.gridding.oversampling;
  o.lut_resolution = p.gridding.lut_resolution;
  o.threads = p.threads;
  o.backend = p.backend;
  BartNufftPlan plan(traj.data, {matrix, matrix, int(P)}, o, what);
  std::vector<cfloat> coils(plan.image_size() * std::size_t(C));
  plan.adjoint(weighted.data(), coils.data(), int(C));
  std::vector<cfloat> image(plan.image_size());
  for (std::size_t i = 0; i < image.size(); ++i) {
    double sum = 0;
    for (long c = 0; c < C; ++c) sum += std::norm(coils[std::size_t(c) * image.size() + i]);
    image[i] = cfloat(float(std::sqrt(sum)), 0.f);
  }
  return image;
}

}  // namespace radstream
