#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "core/error.hpp"
#include "core/trajectory.hpp"
#include "io/frame_io.hpp"
#include "io/image_stats.hpp"
#include "recon/coil_map_estimate.hpp"
#include "recon/recon_chain.hpp"
#include "recon_test_params.hpp"
#include "sim/coil_maps.hpp"
#include "sim/phantom.hpp"
#include "sim/simulator.hpp"
#include "tests/stages/temporal_mean/temporal_mean.hpp"

using namespace radstream;

using test::cpu_params;

TEST(Chain, StagesInOrderAndBuffersReused) {
  ReconChain chain(cpu_params(), Backend::Cpu, default_registry());
  const std::vector<std::string> expect{"density", "gridding", "fft", "deapodize", "coil_combine"};
  EXPECT_EQ(chain.stage_names(), expect);
}

TEST(Chain, RejectsFrameOfOtherGeometry) {
  ReconChain chain(cpu_params(), Backend::Cpu, default_registry());
  chain.configure(Geometry{32, 64, 16, 2, 2.f});
  Frame wrong(Geometry{32, 64, 17, 2, 2.f});
  EXPECT_THROW(chain.reconstruct(wrong), InputError);
}

TEST(Chain, ConfigErrorsNameTheValue) {
  auto p = cpu_params();
  p.gridding.width = 3;
  try {
    ReconChain chain(p, Backend::Cpu, default_registry());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel_width = 3"), std::string::npos) << e.what();
  }
  p = cpu_params();
  p.fft.engine = FftEngine::Cufft;
  EXPECT_THROW(ReconChain(p, Backend::Cpu, default_registry()), ConfigError);
}

// The analytic phantom at the Nyquist number of spokes (pi/2 N): the reconstruction matches the true phantom.
TEST(Chain, SingleCoilPhantomMatchesTheTruePhantom) {
  SimParams s;
  s.matrix = 128;
  s.coils = 1;
  s.angles = "linear180";
  s.spokes_per_rotation = 202;
  const Simulator sim(s);
  const auto spokes = sim.spokes(0, 202);
  const Frame f = frame_from_spokes(sim.header(), spokes);
  ReconChain chain(cpu_params(), Backend::Cpu, default_registry());
  chain.configure(f.geometry);
  const auto img = magnitude(chain.reconstruct(f).span());
  const auto truth = rasterize(modified_shepp_logan(), 128, 4);
  const double unscaled = relative_error(img, truth);  // intensities are absolute: no fit needed
  const double fitted = nrmse_scaled(img, truth);
  std::printf("phantom 128^2, 202 spokes: relative error %.4f (after scalar fit %.4f)\n", unscaled, fitted);
  EXPECT_LT(unscaled, 0.25);  // edges ring (Gibbs) at the ellipse boundaries; the mean level is right
  EXPECT_LT(fitted, 0.25);
  // Inside a flat region of brain tissue (intensity 0.2, FOV point (-0.35, 0.5)) the value is right to 5 %.
  double mean = 0;
  for (int y = 94; y < 99; ++y)
    for (int x = 40; x < 45; ++x) mean += img[y * 128 + x] / 25.0;
  EXPECT_NEAR(truth[96 * 128 + 42], 0.2, 1e-6);
  EXPECT_NEAR(mean, 0.2, 0.01);
}

TEST(Chain, DensityCompensationChoicesAllReconstruct) {
  SimParams s;
  s.matrix = 64;
  s.coils = 2;
  const Simulator sim(s);
  const Frame f = frame_from_spokes(sim.header(), sim.spokes(0, 101));
  // The RSS of the coil images is the phantom times the RSS of the sensitivities.
  auto truth = rasterize(modified_shepp_logan(), 64, 4);
  const CoilMaps maps(2);
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x) {
      const double fx = (x - 32) / 32.0, fy = (y - 32) / 32.0;
      truth[y * 64 + x] *=
          float(std::hypot(std::abs(maps.value(0, fx, fy)), std::abs(maps.value(1, fx, fy))));
    }
  // At 64^2 the error is dominated by ringing at the ellipse edges; for golden angles (uneven gaps) Voronoi
  // weights must beat the ramp, which assumes even gaps.
  std::map<std::string, double> err;
  for (const char* dcf : {"ramp", "ramp-dc", "voronoi"}) {
    auto p = cpu_params();
    p.density.method = parse_dcf(dcf);
    ReconChain chain(p, Backend::Cpu, default_registry());
    chain.configure(f.geometry);
    const auto img = magnitude(chain.reconstruct(f).span());
    const double e = nrmse_scaled(img, truth);
    std::printf("dcf %s: NRMSE vs sensitivity-weighted phantom %.4f\n", dcf, e);
    EXPECT_LT(e, 0.3) << dcf;
    err[dcf] = e;
  }
  EXPECT_LT(err["voronoi"], err["ramp-dc"]);
  EXPECT_LT(err["ramp-dc"], err["ramp"]);
}

// Recipes are data: the method picks one, the chain runs it and exposes its named buffers; every registered
// stage calls itself by its registry key; a recipe that writes a buffer in place through a stage that does
// not allow it, or writes one buffer twice, is refused when configured.
TEST(Chain, RecipesAreDataAndRegistryKeysAreStageNames) {
  const Registry reg = default_registry();
  for (const auto& key : reg.names(Backend::Cpu))
    EXPECT_EQ(reg.create(key, Backend::Cpu, cpu_params())->name(), key);
  ReconParams p = cpu_params();
  const Recipe grid = recipe_for(p, Backend::Cpu);
  ASSERT_EQ(grid.steps.size(), 5u);
  EXPECT_EQ(grid.steps[2].stage, "fft");
  EXPECT_EQ(grid.steps[2].output, "grid");  // in place on the gridded data
  EXPECT_TRUE(grid.has_buffer("coil_images"));
  p.method = ReconMethod::Fbp;
  const Recipe fbp = recipe_for(p, Backend::Cpu);
  EXPECT_EQ(fbp.name, "fbp");
  EXPECT_EQ(fbp.steps.back().output, "image");
  p = cpu_params();
  p.fft.engine = FftEngine::Custom;  // the fused tail only exists on the GPU
  // On the GPU the density weights are applied inside the spread: one step from the samples to the grids.
  const Recipe fused = recipe_for(p, Backend::Cuda);
  ASSERT_EQ(fused.steps.size(), 2u);
  EXPECT_EQ(fused.steps[0].stage, "density_gridding");
  EXPECT_EQ(fused.steps[1].stage, "fft_deapodize_combine");
  EXPECT_EQ(recipe_for(cpu_params(), Backend::Cuda).steps[0].stage, "density_gridding");
  EXPECT_EQ(recipe_for(p, Backend::Cuda).has_buffer("coil_images"), false);

  const Geometry g{32, 64, 24, 2, 2.f};
  ReconChain bad_in_place(cpu_params(), Backend::Cpu, reg,
                          Recipe{"bad", {{"density", "weighted"}, {"gridding", "weighted"}}});
  EXPECT_THROW(bad_in_place.configure(g), ConfigError);
  ReconChain twice(
      cpu_params(), Backend::Cpu, reg,
      Recipe{"twice", {{"density", "weighted"}, {"gridding", "grid"}, {"fft", "x"}, {"deapodize", "grid"}}});
  EXPECT_THROW(twice.configure(g), ConfigError);
  // A partial recipe: the chain's output is its last buffer (the gridded k-space, [coils][G][G]).
  ReconChain partial(cpu_params(), Backend::Cpu, reg,
                     Recipe{"grid-only", {{"density", "weighted"}, {"gridding", "grid"}}});
  partial.configure(g);
  Frame f(g);
  for (std::size_t i = 0; i < f.data.size(); ++i) f.data[i] = cfloat(1.f, 0.f);
  const auto out = partial.reconstruct(f);
  EXPECT_EQ(out.size(), 2u * 64 * 64);
  EXPECT_FALSE(partial.keeps_coil_images());
  EXPECT_THROW(partial.coil_images(), InputError);
}

// The GPU's one-step density-weighted gridding has a CPU twin: on a golden-angle frame with random samples,
// for every weighting, the same grids bit for bit as the density stage followed by the gridding stage.
TEST(Chain, DensityGriddingEqualsDensityThenGriddingOnTheCpu) {
  const Registry reg = default_registry();
  const Geometry g{32, 64, 24, 3, 2.f};
  Frame f(g);
  AngleSpec a;
  for (int p = 0; p < g.spokes; ++p)
    spoke_coordinates(a.angle(p), g.samples,
                      std::span<float>(f.traj.data() + std::size_t(p) * g.samples * 2, g.samples * 2));
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.f, 1.f);
  for (std::size_t i = 0; i < f.data.size(); ++i) f.data[i] = cfloat(d(rng), d(rng));
  for (const char* m : {"none", "ramp", "ramp-dc", "voronoi"}) {
    ReconParams p = cpu_params();
    p.density.method = parse_dcf(m);
    ReconChain two(p, Backend::Cpu, reg, Recipe{"two", {{"density", "weighted"}, {"gridding", "grid"}}});
    ReconChain one(p, Backend::Cpu, reg, Recipe{"one", {{"density_gridding", "grid"}}});
    two.configure(g);
    one.configure(g);
    const auto a2 = two.reconstruct(f);
    const std::vector<cfloat> ref(a2.data, a2.data + a2.size());
    const auto a1 = one.reconstruct(f);
    ASSERT_EQ(a1.size(), ref.size());
    double peak = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      EXPECT_EQ(a1.data[i], ref[i]) << m << " cell " << i;
      peak = std::max(peak, double(std::abs(ref[i])));
    }
    EXPECT_GT(peak, 0.0) << m;
  }
}

namespace {
// A stage that adds the chain's previous output to its input: frame k's output is the sum of the images of
// frames 1..k, which shows that the frame context carries the previous result.
class AddPrevious final : public Stage {
 public:
  std::string name() const override { return "add_previous"; }
  StageSpec spec() const override {
    StageSpec s;
    s.previous_output = true;
    return s;
  }
  Extents configure(const Geometry&, const Extents& input, Context&) override { return ext_ = input; }
  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context&) override {
    ASSERT_EQ(frame.previous.size(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) out.data[i] = in.data[i] + frame.previous.data[i];
  }

 private:
  Extents ext_;
};

// A 48-spoke frame of the 32^2 two-coil phantom.
Frame small_frame() {
  SimParams sp;
  sp.matrix = 32;
  sp.coils = 2;
  const Simulator sim(sp);
  return frame_from_spokes(sim.header(), sim.spokes(0, 48));
}

// |got - factor ref| / |factor ref|, in double.
double rel_to_multiple(View<const cfloat> got, const std::vector<cfloat>& ref, double factor) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += std::norm(std::complex<double>(got.data[i]) - factor * std::complex<double>(ref[i]));
    den += std::norm(factor * std::complex<double>(ref[i]));
  }
  return std::sqrt(num / den);
}
}  // namespace

TEST(Chain, FrameContextCarriesThePreviousResult) {
  Registry reg = default_registry();
  reg.add("add_previous", Backend::Cpu, [](const ReconParams&) { return std::make_unique<AddPrevious>(); });
  Recipe r = recipe_for(cpu_params(), Backend::Cpu);
  r.steps.push_back({"add_previous", "summed"});
  ReconChain chain(cpu_params(), Backend::Cpu, reg, r);
  const Frame f = small_frame();
  chain.configure(f.geometry);
  const auto first = chain.reconstruct(f);
  const std::vector<cfloat> one(first.data, first.data + first.size());
  const auto second = chain.reconstruct(f);
  EXPECT_LE(rel_to_multiple(second, one, 2.0),
            1e-6);              // frame 2 = its image + frame 1's output (zeros before frame 1)
  chain.configure(f.geometry);  // a new geometry starts from zeros again
  const auto again = chain.reconstruct(f);
  for (std::size_t i = 0; i < one.size(); ++i) EXPECT_EQ(again.data[i], one[i]);
}

// Every stage that declares state gets its own: a stage that keeps its previous output (add_previous) and the
// example stage with a declared state buffer (temporal_mean, alpha 1/2) in one chain, each reading only its
// own state. Frame k's add_previous output is k I (I the frame's image), so the mean after it is 0.5 I, 1.25
// I, 2.125 I; a new stream (reset_state) starts both from zeros again. The example stage comes in through one
// registry line and one recipe line, as docs/architecture.md's walk-through says.
TEST(Chain, EachStageKeepsItsOwnState) {
  Registry reg = default_registry();
  reg.add("add_previous", Backend::Cpu, [](const ReconParams&) { return std::make_unique<AddPrevious>(); });
  reg.add_twins(
      "temporal_mean", [](const ReconParams&) { return make_temporal_mean_cpu(0.5f); },
      RADSTREAM_CUDA_TWIN([](const ReconParams&) { return make_temporal_mean_cuda(0.5f); }));
  Recipe r = recipe_for(cpu_params(), Backend::Cpu);
  r.steps.push_back({"add_previous", "summed"});
  r.steps.push_back({"temporal_mean", "smoothed"});
  ReconChain chain(cpu_params(), Backend::Cpu, reg, r);
  const Frame f = small_frame();
  chain.configure(f.geometry);
  ReconChain plain(cpu_params(), Backend::Cpu, reg, recipe_for(cpu_params(), Backend::Cpu));
  plain.configure(f.geometry);
  const auto img = plain.reconstruct(f);
  const std::vector<cfloat> I(img.data, img.data + img.size());
  auto rel_to = [&](View<const cfloat> got, double factor) { return rel_to_multiple(got, I, factor); };
  const double expected[] = {0.5, 1.25, 2.125};
  for (double e : expected) EXPECT_LE(rel_to(chain.reconstruct(f), e), 1e-6) << "expected " << e << " I";
  chain.reset_state();
  EXPECT_LE(rel_to(chain.reconstruct(f), 0.5), 1e-6);
  EXPECT_LE(rel_to(chain.reconstruct(f), 1.25), 1e-6);
}

// The stage contract's declarations: what each stage of the program reads and keeps.
TEST(Chain, StagesDeclareWhatTheyRead) {
  const Registry reg = default_registry();
  ReconParams p = cpu_params();
  EXPECT_TRUE(reg.create("gridding", Backend::Cpu, p)->spec().point_plan);
  EXPECT_TRUE(reg.create("fbp_project", Backend::Cpu, p)->spec().spoke_lines);
  EXPECT_TRUE(reg.create("density", Backend::Cpu, p)->spec().in_place);
  EXPECT_FALSE(reg.create("coil_combine", Backend::Cpu, p)->spec().coil_maps);
  p.combine.method = CoilCombineMethod::Sense;
  EXPECT_TRUE(reg.create("coil_combine", Backend::Cpu, p)->spec().coil_maps);
  p.cg.warm_start = true;
  const StageSpec cg = reg.create("cg_sense", Backend::Cpu, p)->spec();
  EXPECT_TRUE(cg.coil_maps);
  EXPECT_TRUE(cg.previous_output);
  EXPECT_TRUE(cg.capturable);
  p.cg.deadline_ms = 5;
  EXPECT_FALSE(reg.create("cg_sense", Backend::Cpu, p)->spec().capturable);
}

// Complex images (--mrd-pixels complex): the sense combination keeps the phase, sum conj(S) x / sum |S|^2
// (checked in double against the chain's own coil images), and the image is its magnitude; cg-sense and
// nlinv keep their solution; a root-sum-of-squares combination has no phase and is refused by name.
TEST(Chain, KeepingThePhaseGivesTheComplexImageWhoseMagnitudeIsTheImage) {
  SimParams s;
  s.matrix = 32;
  s.coils = 3;
  const Simulator sim(s);
  const Frame f = frame_from_spokes(sim.header(), sim.spokes(0, 48));
  const Registry reg = default_registry();
  ReconParams p = cpu_params();
  p.combine.method = CoilCombineMethod::Sense;
  p.keep_phase = true;
  p.validate();
  const HostBuffer<cfloat> maps = estimate_coil_maps(f.data.view(), f.traj.view(), s.matrix);
  ReconChain chain(p, Backend::Cpu, reg);
  EXPECT_TRUE(chain.keeps_complex_image());
  chain.configure(f.geometry);
  chain.set_coil_maps(maps.view());
  const auto img = chain.reconstruct(f);
  const std::vector<cfloat> image(img.data, img.data + img.size());
  const auto cx = chain.complex_image();
  const auto coils = chain.coil_images();
  const std::size_t px = image.size();
  double err = 0, norm = 0, mag = 0, imag = 0;
  for (std::size_t i = 0; i < px; ++i) {
    std::complex<double> num = 0;
    double den = 0;
    for (int c = 0; c < s.coils; ++c) {
      const std::complex<double> sc(maps.data()[c * px + i]), x(coils.data[c * px + i]);
      num += std::conj(sc) * x;
      den += std::norm(sc);
    }
    const std::complex<double> want = den > 1e-12 ? num / den : 0.0;
    err += std::norm(std::complex<double>(cx.data[i]) - want);
    norm += std::norm(want);
    mag = std::max(mag, std::abs(std::abs(cx.data[i]) - double(image[i].real())));
    imag += double(cx.data[i].imag()) * cx.data[i].imag();
    EXPECT_EQ(image[i].imag(), 0.f);
  }
  std::printf("sense combination with its phase: vs double %.3g, |x| vs image %.3g, imaginary energy %.3f\n",
              std::sqrt(err / norm), mag, imag / norm);
  EXPECT_LE(std::sqrt(err / norm), 1e-5);
  EXPECT_LE(mag, 1e-5 * std::sqrt(norm / double(px)) * 10);
  EXPECT_GT(imag / norm, 0.01);  // a phase, not a magnitude with zero imaginary part

  // The magnitude is the one a chain without the phase gives.
  ReconParams q = p;
  q.keep_phase = false;
  ReconChain plain(q, Backend::Cpu, reg);
  EXPECT_FALSE(plain.keeps_complex_image());
  plain.configure(f.geometry);
  plain.set_coil_maps(maps.view());
  const auto ref = plain.reconstruct(f);
  for (std::size_t i = 0; i < px; ++i) EXPECT_NEAR(ref.data[i].real(), image[i].real(), 1e-5f);
  EXPECT_THROW(plain.complex_image(), InputError);

  ReconParams cg = cpu_params();
  cg.method = ReconMethod::CgSense;
  cg.keep_phase = true;
  EXPECT_TRUE(ReconChain(cg, Backend::Cpu, reg).keeps_complex_image());
  ReconParams rss = cpu_params();
  rss.keep_phase = true;
  try {
    rss.validate();
    ADD_FAILURE() << "rss with keep_phase accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("coil_combine = rss"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cg-sense, nlinv, or coil_combine sense"), std::string::npos);
  }
}

// CG-SENSE under a deadline keeps back what earlier frames overran by, as NLINV does: with a deadline no
// iteration can meet (1 us; the first iteration always runs), every frame overruns, stops after one
// iteration (counted as stopped early), and the reserve grows to its cap, a quarter of the deadline.
TEST(Chain, ACgSenseDeadlineReservesWhatEarlierFramesOverranBy) {
  SimParams s;
  s.matrix = 32;
  s.coils = 3;
  const Simulator sim(s);
  const Frame f = frame_from_spokes(sim.header(), sim.spokes(0, 48));
  const HostBuffer<cfloat> maps = estimate_coil_maps(f.data.view(), f.traj.view(), s.matrix);
  ReconParams p = cpu_params();
  p.method = ReconMethod::CgSense;
  p.cg.deadline_ms = 0.001;
  p.validate();
  ReconChain chain(p, Backend::Cpu, default_registry());
  chain.configure(f.geometry);
  chain.set_coil_maps(maps.view());
  for (int k = 0; k < 3; ++k) {
    chain.reconstruct(f);
    const SolverStats st = chain.solver_stats();
    EXPECT_EQ(st.iterations, 1) << "frame " << k;
    EXPECT_TRUE(st.stopped_early) << "frame " << k;
    EXPECT_GT(st.ms, p.cg.deadline_ms) << "frame " << k;
    EXPECT_DOUBLE_EQ(st.deadline_reserve_ms, 0.25 * p.cg.deadline_ms) << "frame " << k;
  }
}
