// The exact non-uniform DFT in double precision: the reference the gridding is tested against.
#pragma once
#include <array>
#include <complex>
#include <span>
#include <vector>

namespace radstream {

// Adjoint: img(x, y) = sum_j w_j d_j exp(+2 pi i (kx_j x + ky_j y)), x, y in -N/2 .. N/2-1, stored [y][x]
// with x + N/2 fastest. traj [n][2] in cycles/pixel; weights may be empty (all 1).
std::vector<std::complex<double>> adjoint_nudft(std::span<const float> traj,
                                                std::span<const std::complex<float>> data,
                                                std::span<const float> weights, int matrix);

// Forward in 1-3 dimensions: y_j = sum_p img(p) exp(-2 pi i k_j . p), p = index - N/2 per axis; traj
// [n][dims] (x first), image [(Nz)][Ny][Nx] with x fastest; matrix = {Nx, Ny, Nz} (unused axes 1).
std::vector<std::complex<double>> forward_nudft(std::span<const float> traj, int dims,
                                                std::span<const std::complex<float>> image,
                                                std::array<int, 3> matrix);

// The same sums at chosen outputs only, for a batch (the accuracy sweeps of large transforms): pixels and
// points are flat indices (pixel: x fastest). adjoint_nudft_at: data [batch][n] -> out [batch][pixels],
// out = sum_j data_j exp(+2 pi i k_j . p); forward_nudft_at: image [batch][prod N] -> out [batch][points].
std::vector<std::complex<double>> adjoint_nudft_at(std::span<const float> traj, int dims,
                                                   std::span<const std::complex<float>> data, int batch,
                                                   std::array<int, 3> matrix,
                                                   std::span<const std::size_t> pixels);
std::vector<std::complex<double>> forward_nudft_at(std::span<const float> traj, int dims,
                                                   std::span<const std::complex<float>> image, int batch,
                                                   std::array<int, 3> matrix,
                                                   std::span<const std::size_t> points);

}  // namespace radstream
