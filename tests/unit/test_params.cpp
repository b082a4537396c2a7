#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "core/error.hpp"
#include "recon/recon_params.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_runtime.hpp"

using namespace radstream;

namespace {
std::string config_error(const char* yaml) {
  try {
    ReconParams::from_config(YAML::Load(yaml));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Params, ReadsKnownKeys) {
  const auto p = ReconParams::from_config(YAML::Load(
      "{dcf: voronoi, kernel_width: 6, oversampling: 1.25, lut_resolution: 256, backend: cpu, fft: fftw}"));
  EXPECT_EQ(p.density.method, DcfMethod::Voronoi);
  EXPECT_EQ(p.gridding.width, 6);
  EXPECT_DOUBLE_EQ(p.gridding.oversampling, 1.25);
  EXPECT_EQ(p.gridding.lut_resolution, 256);
  EXPECT_EQ(p.backend, BackendChoice::Cpu);
}

TEST(Params, DefaultsWhenEmpty) {
  const auto p = ReconParams::from_config(YAML::Node());
  EXPECT_EQ(p.gridding.width, 4);
  EXPECT_DOUBLE_EQ(p.gridding.oversampling, 2.0);
  EXPECT_EQ(p.density.method, DcfMethod::RampDc);
}

TEST(Params, RejectsUnknownKeyNamingIt) {
  const auto msg = config_error("{kernel_widht: 4}");
  EXPECT_NE(msg.find("kernel_widht"), std::string::npos) << msg;
}

TEST(Params, RejectsOutOfRangeNamingKeyAndValue) {
  auto msg = config_error("{kernel_width: 40}");
  EXPECT_NE(msg.find("recon.kernel_width = 40"), std::string::npos) << msg;
  msg = config_error("{oversampling: 0.5}");
  EXPECT_NE(msg.find("oversampling"), std::string::npos) << msg;
  msg = config_error("{kernel_width: 5}");
  EXPECT_NE(msg.find("even"), std::string::npos) << msg;
  msg = config_error("{dcf: magic}");
  EXPECT_NE(msg.find("magic"), std::string::npos) << msg;
  msg = config_error("{kernel_width: four}");
  EXPECT_NE(msg.find("four"), std::string::npos) << msg;
}

TEST(Params, SimulatorRejectsBadValues) {
  EXPECT_THROW(SimParams::from_config(YAML::Load("{colis: 3}")), ConfigError);
  SimParams p;
  p.coils = 65;
  EXPECT_THROW(Simulator{p}, ConfigError);
  p.coils = 4;
  p.angles = "zigzag";
  EXPECT_THROW(Simulator{p}, ConfigError);
}

TEST(Params, DescribeListsEveryKey) {
  const auto lines = ReconParams::describe();
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  for (const char* key :
       {"dcf", "kernel_width", "oversampling", "lut_resolution", "backend", "fft", "threads"})
    EXPECT_NE(all.find(std::string("recon.") + key), std::string::npos) << key;
}

TEST(Params, EveryShippedConfigParses) {
  namespace fs = std::filesystem;
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(RADSTREAM_CONFIG_DIR)) {
    if (e.path().extension() != ".yaml") continue;
    const YAML::Node root = YAML::LoadFile(e.path().string());
    if (root["recon"]) {
      EXPECT_NO_THROW(ReconParams::from_config(root["recon"])) << e.path();
    }
    // Run configurations (those with a stream: or frames: section) parse whole.
    if (root["stream"] || root["frames"]) {
      EXPECT_NO_THROW(RunConfig::from_yaml(root, e.path().string())) << e.path();
    }
    ++n;
  }
  EXPECT_GE(n, 3);
}

TEST(Params, RunConfigRejectsUnknownSectionsKeysAndValuesByName) {
  auto err = [](const char* yaml) {
    try {
      RunConfig::from_yaml(YAML::Load(yaml), "test.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err("streem: {}").find("unknown section 'streem'"), std::string::npos);
  EXPECT_NE(err("stream: {socket: dealer}").find("dealer"), std::string::npos);
  EXPECT_NE(err("frames: {window: 0}").find("frames.window = 0"), std::string::npos);
  EXPECT_NE(err("frames: {window: 2000}").find("max_window"), std::string::npos);
  EXPECT_NE(err("frames: {framing: spiral}").find("spiral"), std::string::npos);
  EXPECT_NE(err("sinks: {image_format: jpg}").find("jpg"), std::string::npos);
  EXPECT_NE(err("sinks: {record: out.txt}").find("out.txt"), std::string::npos);
  EXPECT_NE(err("frames: {windows: 3}").find("windows"), std::string::npos);
  EXPECT_EQ(err("frames: {window: 128, stride: 8}"), "");
}
