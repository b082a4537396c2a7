// bench-exact's cases on the live-path scale and across GPUs: S4 (time-segmented field-corrected CG-SENSE on
// the NUFFT) and SL (a stack of slices spread over the GPUs, seed 001's multi-GPU reconstruction).
#include <fmt/format.h>
#include <chrono>
#include <cmath>
#include <numbers>

#include "bench/bench_exact.hpp"
#include "core/log.hpp"
#include "exact/exact_slices.hpp"
#include "exact/segmented_toeplitz.hpp"
#include "exact/time_segmented.hpp"
#include "gpu/cuda_runtime.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "io/exact_inputs.hpp"
#include "iter/conjugate_gradient.hpp"
#include "linalg/vector_ops.hpp"
#include "sim/coil_maps.hpp"
#include "sim/phantom.hpp"
#include "sim/phantom3d.hpp"
#if RADSTREAM_HAVE_CUDA
#include "noncart/nufft_operator_cuda.hpp"
#include "noncart/sense_operator_cuda.hpp"
#endif

namespace radstream::app {

// S4: field-corrected CG-SENSE through time segments on the NUFFT: 256^2, 256 golden-angle spokes x 512
// samples x 32 coils (analytic maps), a smooth off-resonance map (up to 60 Hz), readout times 2..4 ms; data
// made with 16 segments, reconstructed with 4: G^H d then 10 CG iterations on G^H G + lambda I (G = sum_l b_l
// E P_l, E the SENSE operator), per frame with the data on the device. Two forms of G^H G: the Toeplitz one
// (SegmentedToeplitzCuda, its kernels made inside the frame's time) and the direct one (forward then
// adjoint).
nlohmann::ordered_json bench_s4(const BenchExactArgs& a, bool gpu) {
#if RADSTREAM_HAVE_CUDA
  if (!gpu) return {{"skipped", "GPU only"}};
  const int N = 256, S = 512, P = 256, C = 32, L = 4;
  const std::size_t M = std::size_t(S) * P, V = std::size_t(N) * N;
  std::vector<float> traj(2 * M), t(M), fm(V);
  const double golden = std::numbers::pi / 1.6180339887498948482;
  for (int p = 0; p < P; ++p)
    for (int i = 0; i < S; ++i) {
      const double r = double(i - S / 2) / S, ang = p * golden;
      traj[2 * (std::size_t(p) * S + i)] = float(r * std::cos(ang));
      traj[2 * (std::size_t(p) * S + i) + 1] = float(r * std::sin(ang));
      t[std::size_t(p) * S + i] = float(2e-3 + 4e-6 * i);
    }
  const CoilMaps cm(C);
  std::vector<cfloat> maps(std::size_t(C) * V);
  for (int y = 0; y < N; ++y)
    for (int x = 0; x < N; ++x) {
      const double u = (x - N / 2) * 2.0 / N, v = (y - N / 2) * 2.0 / N;
      fm[std::size_t(y) * N + x] = float(60.0 * std::exp(-((u - 0.2) * (u - 0.2) + v * v) / 0.1) - 15.0 * v);
      for (int c = 0; c < C; ++c)
        maps[std::size_t(c) * V + std::size_t(y) * N + x] = cfloat(cm.value(c, u, v));
    }
  const std::vector<float> truth = rasterize(modified_shepp_logan(), N);
  std::vector<cfloat> x0(truth.begin(), truth.end());
  gpu::Stream stream;
  const auto s = stream.get();
  auto up = [&](const auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    DeviceBuffer<T> d(Extents{v.size()});
    gpu::copy_to_device(d.data(), v.data(), v.size() * sizeof(T), s);
    return d;
  };
  auto d_traj = up(traj);
  auto d_maps = up(maps);
  auto d_x0 = up(x0);
  auto sense = std::make_shared<SenseOperatorCuda>(N, C, M, NufftKernel{4, a.s4_sigma, 1024}, false, s);
  sense->set_maps(d_maps.data());
  sense->set_points(d_traj.data());
  DeviceBuffer<cfloat> d_data(Extents{M * C}), d_b(Extents{V}), d_x(Extents{V});
  TimeSegmentedCuda truth_op(sense, fm, t, 16, s);
  truth_op.forward(d_x0.data(), d_data.data());
  auto g = std::make_shared<TimeSegmentedCuda>(sense, fm, t, L, s);
  // The Toeplitz form: L(L+1)/2 PSF kernels made per frame (the trajectory of a live frame changes), one
  // adjoint NUFFT each onto the 2N matrix.
  const NufftKernel psf_kernel{4, a.s4_sigma, 1024};
  NufftOperatorCuda psf(2 * N, 1, M, psf_kernel, s);
  SegmentedToeplitzCuda toeplitz(g, SegmentedToeplitzSpec{N, C, d_maps.data(), fm, t, L}, s);
  auto ops = make_vector_ops_cuda(s);
  ConjugateGradient cg(V, *ops);
  CgOptions o;
  o.max_iterations = 10;
  o.lambda = 1e-3 * double(M);
  nlohmann::ordered_json j;
  j["what"] =
      "time-segmented field-corrected CG-SENSE, 256^2, 256 x 512 x 32 coils, 4 segments, 10 iterations";
  j["nufft"] = {{"width", 4}, {"oversampling", a.s4_sigma}};
  for (const bool use_toeplitz : {true, false}) {
    std::vector<double> times;
    for (int r = 0; r < a.repeat + 1; ++r) {
      gpu::synchronize(s);
      const auto t0 = std::chrono::steady_clock::now();
      if (use_toeplitz) {
        psf.set_points(d_traj.data());
        toeplitz.make_kernels(psf);
      }
      g->adjoint(d_data.data(), d_b.data());
      if (use_toeplitz)
        cg.solve(toeplitz, d_b.data(), d_x.data(), o, false);
      else
        cg.solve(*g, d_b.data(), d_x.data(), o, false);
      gpu::synchronize(s);
      if (r > 0)
        times.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::vector<cfloat> x(V);
    gpu::copy_to_host(x.data(), d_x.data(), V * sizeof(cfloat), s);
    gpu::synchronize(s);
    const ImageScore sc = score_image(x, truth, true);
    auto r = stats(times);
    r["nrmse_percent_vs_phantom_scale_fitted"] = sc.percent_error;
    const char* form = use_toeplitz ? "toeplitz" : "direct";
    r["form"] = use_toeplitz
                    ? "normal through L(L+1)/2 = 10 Toeplitz PSF kernels on the 2N grid, made per frame"
                    : "normal as G^H G: 4 forward and 4 adjoint 32-coil NUFFTs per iteration";
    log::info("S4 {}: median {:.2f} ms per frame, error {:.1f} % (scale fitted)", form, median(times),
              sc.percent_error);
    if (use_toeplitz) {
      j["median_ms"] = r["median_ms"];
      j["nrmse_percent_vs_phantom_scale_fitted"] = sc.percent_error;
    }
    j[form] = r;
  }
  return j;
#else
  (void)a;
  (void)gpu;
  return {{"skipped", "no CUDA in this build"}};
#endif
}

// SL: seed 001's multi-GPU case: a stack of 16 slices (the 64^2 case's model, each slice its own data), 8 CG
// iterations with the gradient model, on one GPU and on all of them (one host thread per GPU, a shared
// queue).
nlohmann::ordered_json bench_slices(const BenchExactArgs& a, bool gpu) {
  if (!gpu) return {{"skipped", "GPU only"}};
  const ExactInputs in = load_impatient(a.impatient);
  const int Z = 16;
  std::vector<std::vector<cfloat>> data(Z, in.kdata);
  for (int z = 0; z < Z; ++z)
    for (auto& v : data[z]) v *= float(1.0 + 0.05 * z);
  std::vector<ExactSlice> slices;
  for (auto& d : data) slices.push_back({&in.model, &d});
  ExactReconOptions o;
  o.method = ExactMethod::Cg;
  o.gpu = true;
  o.iterations = 8;
  o.lambda = 1e-2;
  const int have = gpu::query().device_count;
  nlohmann::ordered_json j{{"what", "16 slices of the seed 001 case, 8 CG iterations each"},
                           {"gpus_available", have}};
  exact_reconstruct_slices(slices, 1, o, have);  // warm every device up
  double one = 0;
  for (int g : {1, have}) {
    std::vector<double> t;
    for (int r = 0; r < std::max(1, a.repeat / 2); ++r)
      t.push_back(exact_reconstruct_slices(slices, 1, o, g).wall_ms);
    j["gpus_" + std::to_string(g)] = stats(t);
    if (g == 1) one = median(t);
    log::info("SL: 16 slices on {} GPU(s): median {:.1f} ms{}", g, median(t),
              g > 1 ? fmt::format(" ({:.2f}x one GPU)", one / median(t)) : std::string());
    if (have == 1) break;
  }
  return j;
}

}  // namespace radstream::app
