// The image's finite check on the GPU: the kernel that writes each recipe's image counts its non-finite
// pixels (StageSpec::counts_non_finite), so a frame with an infinite sample fails by name on every method and
// every image tail (cuFFT, the fused custom FFT, magnitude after a solver), while good frames before and
// after it, replayed from the captured CUDA graph, pass. Skips without a GPU; RADSTREAM_REQUIRE_GPU=1 makes
// that a failure.
#include <limits>

#include "core/error.hpp"
#include "gpu/gpu_test_util.hpp"
#include "recon/coil_map_estimate.hpp"
#include "recon/registry.hpp"

using namespace radstream;
using namespace radstream::gputest;

TEST(NonFiniteCuda, TheLastKernelCountsNonFinitePixelsOnEveryMethod) {
  RADSTREAM_REQUIRE_GPU();
  const Frame good = phantom_frame(64, 4, 0, 48);
  Frame bad = phantom_frame(64, 4, 0, 48);
  bad.data[100] = cfloat(std::numeric_limits<float>::infinity(), 0.f);
  const Registry reg = default_registry();
  const HostBuffer<cfloat> maps = estimate_coil_maps(good.data.view(), good.traj.view(), 64);
  struct Case {
    const char* name;
    ReconMethod method;
    FftEngine fft;
  };
  for (const Case& c : {Case{"gridding (cufft)", ReconMethod::Gridding, FftEngine::Cufft},
                        Case{"gridding (fused custom FFT)", ReconMethod::Gridding, FftEngine::Custom},
                        Case{"fbp", ReconMethod::Fbp, FftEngine::Cufft},
                        Case{"cg-sense", ReconMethod::CgSense, FftEngine::Cufft},
                        Case{"nlinv", ReconMethod::Nlinv, FftEngine::Cufft}}) {
    ReconParams p;
    p.method = c.method;
    p.fft.engine = c.fft;
    p.cg.iterations = 5;
    ReconChain chain(p, Backend::Cuda, reg);
    chain.configure(good.geometry);
    if (chain.needs_coil_maps()) chain.set_coil_maps(maps.view());
    for (int i = 0; i < 2; ++i) EXPECT_NO_THROW(chain.reconstruct(good)) << c.name;
    try {
      chain.reconstruct(bad);
      ADD_FAILURE() << c.name << ": a non-finite image came out";
    } catch (const NumericError& e) {
      std::printf("%s: %s\n", c.name, e.what());
      EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
    }
    const auto after = chain.reconstruct(good);
    std::size_t non_finite = 0;
    for (const cfloat& v : after.span()) non_finite += !std::isfinite(v.real()) || !std::isfinite(v.imag());
    EXPECT_EQ(non_finite, 0u) << c.name;
  }
}
