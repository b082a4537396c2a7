// Finite input within float's range gives a finite image or a named failure, never a NaN image: data scaled
// to 1e30 (CG-SENSE's norms square past float's range), one sample of 3e38, and NLINV on denormal data
// (1e-42, whose scale factor 100 / norm is past float's range). Through the real binary on BART-made
// phantoms, and in the chain: a dropped frame does not poison the warm start of the next.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "recon/coil_map_estimate.hpp"
#include "recon/recon_chain.hpp"
#include "sim/simulator.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

std::size_t non_finite(const std::vector<cfloat>& v) {
  std::size_t n = 0;
  for (const cfloat& x : v) n += !std::isfinite(x.real()) || !std::isfinite(x.imag());
  return n;
}

test::CommandResult recon(const test::TempDir& dir, const std::string& args) {
  return test::run_command("cd " + dir.path().string() + " && " + test::radstream_binary() +
                           " recon --backend cpu " + args);
}

}  // namespace

TEST(NonFinite, HugeTinyAndExtremeDataGiveFiniteImagesOrANamedFailure) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  test::bart(dir, "traj -r -x 128 -y 32 traj_os");
  test::bart(dir, "scale 0.5 traj_os traj");
  test::bart(dir, "phantom -k -s 4 -t traj ksp");
  test::bart(dir, "scale 1e30 ksp huge");
  test::bart(dir, "scale 1e-42 ksp tiny");
  CflArray extreme = read_cfl(dir / "ksp");
  extreme.data[1000] = cfloat(3e38f, 0.f);
  write_cfl(dir / "extreme", extreme.dims, extreme.data);
  const std::string common = "--traj traj.cfl --matrix 64 ";
  // Scaled to 1e30 or 1e-42: a finite image, or a failure that names the non-finite output and writes
  // nothing.
  for (const char* k : {"huge", "tiny", "extreme"}) {
    const std::string out = fmt::format("cg-{}", k);
    const auto r = recon(dir, common + fmt::format("--kspace {}.cfl --method cg-sense --out {}.cfl", k, out));
    std::printf("cg-sense on %s data: exit %d\n", k, r.exit_code);
    if (r.exit_code == 0) {
      EXPECT_EQ(non_finite(read_cfl(dir / out).data), 0u) << k;
    } else {
      EXPECT_NE(r.output.find("non-finite"), std::string::npos) << r.output;
      EXPECT_FALSE(std::filesystem::exists(dir / (out + ".cfl"))) << k;
    }
  }
  // The tiny data (well inside float's range after the gridding's sums) give an image.
  EXPECT_EQ(non_finite(read_cfl(dir / "cg-tiny").data), 0u);
  // NLINV on denormal data: the scale that brings them to BART's level is applied in steps a float can hold.
  const auto nl = recon(dir, common + "--kspace tiny.cfl --method nlinv --newton 4 --out nl-tiny.cfl");
  ASSERT_EQ(nl.exit_code, 0) << nl.output;
  const auto tiny = read_cfl(dir / "nl-tiny").data;
  EXPECT_EQ(non_finite(tiny), 0u);
  double energy = 0;
  for (const cfloat& v : tiny) energy += std::norm(v);
  EXPECT_GT(energy, 0.0);  // an image, not zeros
}

TEST(NonFinite, AFrameWithNonFiniteOutputIsDroppedByNameAndTheNextStartsCold) {
  SimParams s;
  s.matrix = 32;
  s.coils = 4;
  s.snr = 0;
  const Simulator sim(s);
  const Frame good = frame_from_spokes(sim.header(), sim.spokes(0, 48));
  Frame bad = frame_from_spokes(sim.header(), sim.spokes(0, 48));
  bad.data[100] = cfloat(3e38f, 0.f);
  ReconParams p;
  p.method = ReconMethod::CgSense;
  p.cg.iterations = 5;
  const Registry reg = default_registry();
  const HostBuffer<cfloat> maps = estimate_coil_maps(good.data.view(), good.traj.view(), s.matrix);
  auto chain_with_maps = [&] {
    auto c = std::make_unique<ReconChain>(p, Backend::Cpu, reg);
    c->configure(good.geometry);
    c->set_coil_maps(maps.view());
    return c;
  };
  auto fresh = chain_with_maps();
  const auto cold = fresh->reconstruct(good);
  const std::vector<cfloat> first(cold.data, cold.data + cold.size());
  auto chain = chain_with_maps();
  chain->reconstruct(good);
  try {
    chain->reconstruct(bad);
    FAIL() << "a non-finite image came out";
  } catch (const NumericError& e) {
    EXPECT_NE(std::string(e.what()).find("cg-sense"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
  }
  const auto after = chain->reconstruct(good);  // cold again: equal to a fresh chain's first frame
  EXPECT_LE(test::rel_error(std::vector<cfloat>(after.data, after.data + after.size()), first), 1e-6);
}
