// radstream bench's NUFFT cases on the CPU (the GPU numbers are the device runs'): the sweep's errors against
// the exact NUDFT follow the kernel (wider and more oversampled is more accurate, W6 sigma 2 within 1e-4),
// the single-operator case reports both directions, --plot draws the sweep, and --baseline names what got
// slower, compares only within a device kind, and refuses a missing file before running anything.
#include <gtest/gtest.h>

#include <stb_image.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "bench/driver_release.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

test::CommandResult radstream_cmd(const std::string& args) {
  return test::run_command(test::radstream_binary() + " " + args);
}

// A small sweep and a small single-operator case, both written as GPU cases (run with --backend cpu).
void write_cases(const test::TempDir& dir) {
  std::filesystem::create_directories(dir / "cases");
  std::ofstream(dir / "cases/sweep.yaml")
      << "bench:\n  name: S\n  kind: nufft-sweep\n  spokes: 24\n  samples: 64\n  coils: 2\n  matrix: 32\n"
      << "  points: 2000\n  random_matrix: 24\n  volume: 10\n  backend: cuda\n";
  std::ofstream(dir / "cases/op.yaml")
      << "bench:\n  name: F\n  kind: nufft\n  spokes: 32\n  samples: 64\n  coils: 3\n  matrix: 32\n"
      << "  backend: cuda\n  target: \"/forward_ms/median <= 0.15\"\n";
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

}  // namespace

TEST(BenchNufft, TheSweepFollowsTheKernelsAccuracyAndIsPlotted) {
  test::TempDir dir;
  write_cases(dir);
  auto r = radstream_cmd("bench --backend cpu --frames 2 --warmup 0 --cases-dir " + dir / "cases" +
                         " --out " + dir / "b.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = read_json(dir / "b.json");
  std::map<std::string, nlohmann::json> by;
  for (const auto& c : j.at("cases")) by[c.at("case")] = c;
  ASSERT_EQ(by.size(), 2u) << j.dump(1);

  const auto& s = by["S"];
  EXPECT_EQ(s.at("backend"), "cpu");
  ASSERT_EQ(s.at("rows").size(), 3u * 2 * 2 * 7);  // geometries x directions x sigmas x widths 2..8
  std::map<std::string, double> err;  // "dims direction W sigma" -> worst error over the geometries
  for (const auto& row : s.at("rows")) {
    EXPECT_GT(row.at("ms").get<double>(), 0.0);
    EXPECT_GT(row.at("points_per_s").get<double>(), 0.0);
    const std::string key = row.at("direction").get<std::string>().substr(0, 3) + " W" +
                            std::to_string(row.at("width").get<int>()) + " s" +
                            std::to_string(row.at("sigma").get<double>()).substr(0, 4);
    err[key] = std::max(err[key], row.at("relative_error").get<double>());
  }
  for (const char* dir_ : {"for", "adj"}) {
    const std::string d = dir_;
    EXPECT_LE(err[d + " W6 s2.00"], 1e-4) << d;
    EXPECT_LE(err[d + " W8 s2.00"], 1e-5) << d;
    EXPECT_LT(err[d + " W8 s2.00"], err[d + " W4 s2.00"]) << d;
    EXPECT_LT(err[d + " W6 s2.00"], err[d + " W6 s1.25"]) << d;
    EXPECT_GT(err[d + " W2 s1.25"], 1e-2) << d;  // the narrowest kernel is visibly inaccurate
    for (int w = 3; w <= 8; ++w)  // every width more accurate than the one below it (odd widths included)
      EXPECT_LT(err[d + " W" + std::to_string(w) + " s2.00"],
                err[d + " W" + std::to_string(w - 1) + " s2.00"])
          << d << " W" << w;
  }
  // The fastest setting within each error bound, per geometry and direction (3 bounds).
  ASSERT_EQ(s.at("fastest").size(), 3u * 2 * 3);
  for (const auto& b : s.at("fastest"))
    if (b.at("error_at_most").get<double>() == 1e-4) {
      ASSERT_TRUE(b.contains("points_per_s")) << b.dump();
      EXPECT_LE(b.at("relative_error").get<double>(), 1e-4);
    }

  const auto& f = by["F"];
  EXPECT_EQ(f.at("coils"), 3);
  EXPECT_LE(f.at("forward_relative_error").get<double>(), 2e-3);  // W4 sigma 2, the gridding default
  EXPECT_LE(f.at("adjoint_relative_error").get<double>(), 2e-3);
  EXPECT_GT(f.at("forward_ms").at("median").get<double>(), 0.0);
  EXPECT_TRUE(f.contains("target_not_applied")) << f.dump();  // a GPU target, moved to the CPU

  r = radstream_cmd("bench --plot " + dir / "b.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load((dir / "b-S.png").c_str(), &w, &h, &ch, 3);
  ASSERT_NE(px, nullptr) << r.output;
  long blue = 0;
  for (int i = 0; i < w * h; ++i) blue += px[3 * i] == 20 && px[3 * i + 1] == 90 && px[3 * i + 2] == 200;
  stbi_image_free(px);
  EXPECT_GT(blue, 300);  // the first curve drawn
}

TEST(BenchNufft, TheBaselineNamesWhatGotSlowerOnTheSameDeviceKindOnly) {
  test::TempDir dir;
  write_cases(dir);
  const std::string run = "bench --backend cpu --case F --frames 2 --warmup 0 --cases-dir " + dir / "cases";
  auto r = radstream_cmd(run + " --out " + dir / "now.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto base = read_json(dir / "now.json");
  // A baseline 1000 times as fast on the same device kind: every timing of F is slower by far more than 5 %
  // whatever this machine's timing noise (a 2x margin was not enough: a cold first run once took 6x longer).
  for (auto& c : base["cases"])
    for (const char* k : {"forward_ms", "adjoint_ms", "set_points_ms"})
      c[k]["median"] = c[k]["median"].get<double>() / 1000;
  std::ofstream(dir / "fast.json") << base.dump();
  base["gpu"] = "NVIDIA Imaginary 9000";
  std::ofstream(dir / "other.json") << base.dump();

  r = radstream_cmd(run + " --baseline " + dir / "fast.json" + " --out " + dir / "b1.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("SLOWER F"), std::string::npos) << r.output;
  const auto b1 = read_json(dir / "b1.json").at("baseline");
  EXPECT_EQ(b1.at("compared").get<int>(), 3) << b1.dump();
  ASSERT_EQ(b1.at("slower").size(), 3u) << b1.dump();
  for (const auto& s : b1.at("slower")) EXPECT_GT(s.at("ratio").get<double>(), 1.05);

  r = radstream_cmd(run + " --baseline " + dir / "other.json" + " --out " + dir / "b2.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto b2 = read_json(dir / "b2.json").at("baseline");
  ASSERT_TRUE(b2.contains("not_compared")) << b2.dump();
  EXPECT_NE(b2.at("not_compared").get<std::string>().find("NVIDIA Imaginary 9000"), std::string::npos);

  r = radstream_cmd(run + " --baseline " + dir / "missing.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("missing.json"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("bench F"), std::string::npos) << "ran a case before refusing:\n" << r.output;
}

// --baseline auto takes the newest result of the same device kind with the most of the cases, and never a
// tried-and-dropped variant's ("...-dropped.json"), however new.
TEST(BenchNufft, TheAutomaticBaselineIsNeverADroppedVariant) {
  test::TempDir dir;
  const std::string cases = dir / "a/cases",
                    results = dir / "tests/bench/results";  // auto: cases/../../tests
  std::filesystem::create_directories(cases);
  std::filesystem::create_directories(results);
  std::ofstream(cases + "/op.yaml") << "bench:\n  name: F\n  kind: nufft\n  spokes: 32\n  samples: 64\n"
                                    << "  coils: 3\n  matrix: 32\n  backend: cuda\n";
  const std::string run = "bench --backend cpu --case F --frames 2 --warmup 0 --cases-dir " + cases;
  auto r = radstream_cmd(run + " --out " + dir / "now.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto base = read_json(dir / "now.json");
  std::ofstream(results + "/kept.json") << base.dump();
  base["date"] = "2099-01-01";
  std::ofstream(results + "/newer-dropped.json") << base.dump();
  r = radstream_cmd(run + " --baseline auto --out " + dir / "auto.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto b = read_json(dir / "auto.json").at("baseline");
  ASSERT_TRUE(b.contains("file")) << b.dump();
  EXPECT_EQ(std::filesystem::path(b.at("file").get<std::string>()).filename(), "kept.json") << b.dump();
}

// The bench JSON's driver release from /proc/driver/nvidia/version's line, for both module flavours (the
// open module's line, as on the device machines, once gave "for").
TEST(BenchNufft, TheDriverReleaseIsReadFromBothModuleLines) {
  EXPECT_EQ(app::driver_release_of("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  "
                                   "Release Build  (dvs-builder@U22)  Thu Oct  2 2025"),
            "580.159.04");
  EXPECT_EQ(
      app::driver_release_of("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 2024"),
      "535.183.01");
  EXPECT_EQ(app::driver_release_of("no release here"), "unknown");
}

// bench says which case it starts (k of n), writes the JSON before each next case, so that an interrupted run
// keeps every case it finished (marked incomplete; here it is killed during the second); a run that names no
// case leaves the long CPU case (N3, minutes with BART beside it) out with a line saying how to run it.
TEST(BenchProgress, AnInterruptedRunKeepsTheCasesItFinished) {
  test::TempDir dir;
  const std::string out = dir / "b.json", log = dir / "log.txt";
  std::system((std::string("(") + test::radstream_binary() +
               " bench --backend cpu --case MRD1 R5-cpu --frames 3 --warmup 0 --out " + out + " > " + log +
               " 2>&1 & pid=$!; for i in $(seq 1 600); do [ -s " + out +
               " ] && break; sleep 0.1; done; sleep 0.5; kill -KILL $pid; wait $pid; echo EXITED >> " + log +
               ")")
                  .c_str());
  std::ifstream lf(log);
  const std::string text((std::istreambuf_iterator<char>(lf)), {});
  EXPECT_NE(text.find("bench 1/2: MRD1"), std::string::npos) << text;
  EXPECT_NE(text.find("bench 2/2: R5-cpu"), std::string::npos) << text;
  std::ifstream jf(out);
  ASSERT_TRUE(jf.good()) << text;
  const auto j = nlohmann::json::parse(jf);
  ASSERT_EQ(j.at("cases").size(), 1u) << j.dump();
  EXPECT_EQ(j.at("cases")[0].at("case"), "MRD1");
  EXPECT_FALSE(j.at("complete").get<bool>());
  // No case named: N3 is left out, said so, and listed as skipped (the run is stopped at once: only the
  // lines before the first case are looked at).
  const auto r = test::run_command("timeout -s INT 3 " + test::radstream_binary() +
                                   " bench --backend cpu --frames 2 --warmup 0 --out " + (dir / "all.json"));
  EXPECT_NE(r.output.find("N3 left out: takes minutes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("radstream bench --case N3"), std::string::npos) << r.output;
}
