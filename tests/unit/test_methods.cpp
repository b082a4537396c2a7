// Methods describe themselves (recon/methods.hpp): every built-in method's declaration is complete (its
// stages exist and declare their memory), the memory budget summed from the declarations is what the
// per-method formulas gave before, and an example method made in this file alone (the example stage of
// tests/stages/temporal_mean behind the gridding chain) runs, is budgeted and lists its keys with no edit to
// the library: its stage's registry line and its one declaration.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <complex>

#include "core/error.hpp"
#include "core/key_names.hpp"
#include "io/frame_io.hpp"
#include "recon/memory_budget.hpp"
#include "recon/methods.hpp"
#include "recon/recon_chain.hpp"
#include "recon_test_params.hpp"
#include "sim/simulator.hpp"
#include "test_util.hpp"
#include "tests/stages/temporal_mean/example_method.hpp"

using namespace radstream;

namespace {

using test::cpu_params;

// The per-method sums the memory budget used before the methods declared their stages' memory.
double formula_bytes(const StageSizes& z, const ReconParams& r) {
  const double n = z.matrix, c = z.coils, s = z.samples, w = z.window, k = 8;
  const double frame = w * s * (c * k + 3 * 4), img = n * n * k;
  const double g = std::ceil(r.gridding.oversampling * n), grid = g * g * c * k, head = n * g * c * k;
  double need = 2 * frame + 8 * img;
  switch (kReconMethods.parse(r.method.str())) {
    case ReconMethod::Gridding:
      need += 2 * grid + 2 * img * c;
      break;
    case ReconMethod::Fbp:
      need += 2 * w * s * c * k + 2 * img * c;
      break;
    case ReconMethod::CgSense:
      need += 2 * grid + head + 2 * img * c + 2 * 4 * img * c + 4 * img + 8 * img;
      break;
    case ReconMethod::Nlinv: {
      const double gn = std::ceil(r.nlinv.grid_os * n);
      const double cn = r.nlinv.virtual_coils > 0 ? std::min<double>(c, r.nlinv.virtual_coils) : c;
      need += 14 * gn * gn * cn * k + 2 * grid + head;
      break;
    }
    case ReconMethod::Fhd:
    case ReconMethod::CgExact:
      need += 2 * grid;
      break;
  }
  return 1.25 * need;
}

StageSizes sizes(double matrix, double coils, double samples, double window) {
  StageSizes s;
  s.matrix = matrix;
  s.coils = coils;
  s.samples = samples;
  s.window = window;
  return s;
}

}  // namespace

TEST(Methods, EveryMethodDeclaresItselfAndTheBudgetSumsItsStages) {
  const Registry reg = default_registry();
  const MethodTable& methods = builtin_methods();
  ASSERT_EQ(methods.all().size(), kReconMethods.items.size());
  for (const auto& e : kReconMethods.items) {
    const MethodSpec& m = methods.at(e.value);
    EXPECT_EQ(m.name, e.name);
    EXPECT_EQ(m.live, !is_exact_method(e.value)) << m.name;
    EXPECT_FALSE(m.key_names().empty()) << m.name;
    ReconParams p = cpu_params();
    p.method = e.value;
    p.gridding.oversampling = 1.5;
    p.nlinv.virtual_coils = 8;
    for (const Backend b : {Backend::Cpu, Backend::Cuda}) {
      if (m.recipe)
        for (const RecipeStep& step : m.recipe(p, b).steps) {
          if (b == Backend::Cpu) {
            EXPECT_TRUE(reg.has(step.stage, b)) << m.name << ": " << step.stage;
          }
          EXPECT_NO_THROW(reg.bytes(step.stage, sizes(64, 4, 128, 32), p)) << m.name << ": " << step.stage;
        }
      for (const StageSizes& z : {sizes(256, 32, 512, 13), sizes(192, 8, 384, 128), sizes(64, 3, 130, 400)}) {
        const double got = method_bytes(reg, m, z, p, b), want = formula_bytes(z, p);
        EXPECT_NEAR(got, want, 1e-9 * want) << m.name << " on " << to_string(b) << ", N " << z.matrix;
      }
    }
  }
  ReconParams p = cpu_params();
  p.cg.deadline_ms = 5;
  p.nlinv.deadline_ms = 8;
  EXPECT_EQ(methods.at(ReconMethod::CgSense).deadline(p), 5.0);
  EXPECT_EQ(methods.at(ReconMethod::Nlinv).deadline(p), 8.0);
  EXPECT_EQ(methods.at(ReconMethod::Gridding).deadline(p), 0.0);
  EXPECT_EQ(methods.at(ReconMethod::Nlinv).route, OfflineRoute::Nlinv);
  EXPECT_EQ(methods.at(ReconMethod::Fhd).route, OfflineRoute::Exact);
  EXPECT_EQ(methods.at(ReconMethod::CgSense).route, OfflineRoute::Chain);
  // CG-SENSE reads its own keys and the NUFFT's (the gridding keys), not the density's.
  KeyNames cg_keys;
  for (const auto& k : methods.at(ReconMethod::CgSense).key_names()) cg_keys.keys.push_back(k);
  for (const char* k : {"iterations", "lambda", "deadline_ms", "kernel_width", "oversampling"})
    EXPECT_TRUE(cg_keys.has(k)) << k;
  EXPECT_FALSE(cg_keys.has("dcf"));
  const std::vector<std::string> exact_keys{"iterations", "lambda"};
  EXPECT_EQ(methods.at(ReconMethod::CgExact).key_names(), exact_keys);
  try {
    methods.at("no-such-method");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no reconstruction method 'no-such-method' (known: gridding, fbp"),
              std::string::npos)
        << e.what();
  }
}

// The example method (tests/stages/temporal_mean/example_method.hpp): the gridding chain with the example
// stage behind it (each frame averaged with the earlier ones, out = in / 2 + state / 2), added to a registry
// with its stage's registry line (the stage's memory: its state, one image) and one method declaration. It
// runs through the chain, the budget counts its stage, and its keys are the gridding chain's.
TEST(Methods, AnExampleMethodIsItsStageAndOneDeclaration) {
  Registry reg = default_registry();
  test::add_example_method(reg);
  const MethodSpec& gridding = reg.method(ReconMethod::Gridding);
  const MethodSpec& m = reg.method(MethodName(test::kExampleMethod));

  SimParams sp;
  sp.matrix = 32;
  sp.coils = 2;
  const Simulator sim(sp);
  const Frame f = frame_from_spokes(sim.header(), sim.spokes(0, 48));
  const ReconParams p = cpu_params();
  ReconChain chain(p, Backend::Cpu, reg, m.recipe(p, Backend::Cpu));
  ReconChain plain(p, Backend::Cpu, reg, gridding.recipe(p, Backend::Cpu));
  chain.configure(f.geometry);
  plain.configure(f.geometry);
  const auto img = plain.reconstruct(f);
  const std::vector<cfloat> I(img.data, img.data + img.size());
  for (const double share : {0.5, 0.75, 0.875}) {  // 1 - 2^-k of the same image after k frames
    const auto got = chain.reconstruct(f);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < I.size(); ++i) {
      num += std::norm(std::complex<double>(got.data[i]) - share * std::complex<double>(I[i]));
      den += std::norm(share * std::complex<double>(I[i]));
    }
    EXPECT_LE(std::sqrt(num / den), 1e-6) << share;
  }
  const StageSizes z = sizes(32, 2, f.geometry.samples, 48);
  EXPECT_DOUBLE_EQ(method_bytes(reg, m, z, p, Backend::Cpu),
                   method_bytes(reg, gridding, z, p, Backend::Cpu) + 1.25 * z.image());
  EXPECT_EQ(m.key_names(), gridding.key_names());
  EXPECT_EQ(m.deadline(p), 0.0);
  // A stage that declares no memory cannot be budgeted: the error names it.
  reg.add("undeclared", Backend::Cpu, [](const ReconParams&) { return make_temporal_mean_cpu(0.5f); });
  MethodSpec undeclared;
  undeclared.name = "undeclared-method";
  undeclared.recipe = [](const ReconParams&, Backend) { return Recipe{"u", {{"undeclared", "image"}}}; };
  reg.add_method(undeclared);
  try {
    method_bytes(reg, reg.method(MethodName("undeclared-method")), z, p, Backend::Cpu);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("stage 'undeclared' declares no memory"), std::string::npos)
        << e.what();
  }
}

// A config names the example method as it names a built-in one (`recon.method: gridding-averaged`): the chain
// takes its recipe from the registry it is made with, the memory budget counts the example stage, and a name
// the registry lacks is refused where the chain is made, with the methods it knows; a name that cannot be a
// method's is refused as the config is read.
TEST(Methods, AMethodARegistryAddsIsChosenByItsNameInAConfig) {
  Registry reg = default_registry();
  test::add_example_method(reg);
  const ReconParams p =
      ReconParams::from_config(YAML::Load("{method: gridding-averaged, backend: cpu, threads: 1}"));
  EXPECT_EQ(to_string(p.method), "gridding-averaged");
  ReconParams plain_params = p;
  plain_params.method = ReconMethod::Gridding;

  SimParams sp;
  sp.matrix = 32;
  sp.coils = 2;
  const Simulator sim(sp);
  const Frame f = frame_from_spokes(sim.header(), sim.spokes(0, 48));
  ReconChain chain(p, Backend::Cpu, reg);
  ReconChain plain(plain_params, Backend::Cpu, reg);
  EXPECT_EQ(chain.recipe().name, "gridding-averaged");
  ASSERT_EQ(chain.recipe().steps.size(), plain.recipe().steps.size() + 1);
  EXPECT_EQ(chain.recipe().steps.back().stage, "temporal_mean");
  chain.configure(f.geometry);
  plain.configure(f.geometry);
  const auto img = plain.reconstruct(f);
  const auto got = chain.reconstruct(f);  // the first frame: half the image (the state starts at zero)
  double num = 0, den = 0;
  for (std::size_t i = 0; i < img.size(); ++i) {
    num += std::norm(std::complex<double>(got.data[i]) - 0.5 * std::complex<double>(img.data[i]));
    den += std::norm(0.5 * std::complex<double>(img.data[i]));
  }
  EXPECT_LE(std::sqrt(num / den), 1e-6);

  const MemoryNeed need = memory_need(reg, sim.header(), p, 48, 0, 1, false),
                   plain_need = memory_need(reg, sim.header(), plain_params, 48, 0, 1, false);
  EXPECT_DOUBLE_EQ(need.recon_bytes - plain_need.recon_bytes, 1.25 * sizes(32, 2, 0, 0).image());

  const ReconParams typo = ReconParams::from_config(YAML::Load("{method: gridding-averagd}"));
  try {
    ReconChain bad(typo, Backend::Cpu, reg);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("recon.method: no reconstruction method 'gridding-averagd' (known: "
                                         "gridding, fbp, cg-sense, fhd, cg-exact, nlinv, gridding-averaged)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ReconChain(p, Backend::Cpu, default_registry()), ConfigError);  // not a built-in method
  try {
    ReconParams::from_config(YAML::Load("{method: 'Gridding Averaged'}"));
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("recon.method: reconstruction method 'Gridding Averaged' is not one "
                                         "of gridding, fbp, cg-sense, fhd, cg-exact, nlinv (nor a registered "
                                         "method's name"),
              std::string::npos)
        << e.what();
  }
}

// `radstream recon` refuses a recon option the method does not read (by its declaration) and names the
// methods that read it; the options it reads pass.
TEST(Methods, ReconRefusesAnOptionTheMethodDoesNotReadAndNamesWhoReadsIt) {
  test::TempDir dir;
  const std::string bin = "timeout 120 " + test::radstream_binary() + " ";
  const std::string h5 = dir / "s.h5";
  ASSERT_EQ(test::run_command(bin + "simulate --out " + h5 + " --matrix 32 --coils 2 --spokes 48").exit_code,
            0);
  auto r = test::run_command(bin + "recon --backend cpu --input " + h5 +
                             " --method gridding --iterations 5 --out " + (dir / "a.png") + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(
      r.output.find("--iterations does not apply to --method gridding (it goes with --method cg-sense, fhd, "
                    "cg-exact)"),
      std::string::npos)
      << r.output;
  r = test::run_command(bin + "recon --backend cpu --input " + h5 +
                        " --method cg-sense --dcf voronoi --out " + (dir / "b.png") + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--dcf does not apply to --method cg-sense (it goes with --method gridding)"),
            std::string::npos)
      << r.output;
  r = test::run_command(bin + "recon --backend cpu --input " + h5 +
                        " --method nlinv --kernel-width 6 --out " + (dir / "c.png") + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--kernel-width does not apply to --method nlinv (it goes with --method gridding, "
                          "cg-sense)"),
            std::string::npos)
      << r.output;
  r = test::run_command(bin + "recon --backend cpu --input " + h5 +
                        " --method cg-sense --iterations 3 --kernel-width 6 "
                        "--out " +
                        (dir / "d.png") + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}
