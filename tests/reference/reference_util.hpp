// Shared by the reference tests that run `radstream recon` in a folder and compare .cfl images.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "test_util.hpp"

namespace radstream::reftest {

// `radstream recon --backend cpu ARGS` in the folder; the test fails unless it exits 0.
inline void radstream_recon(const test::TempDir& dir, const std::string& args) {
  const auto r = test::run_command("cd " + dir.path().string() + " && " + test::radstream_binary() +
                                   " recon --backend cpu " + args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

// The magnitude of a .cfl image.
inline std::vector<float> mag(const std::string& path) {
  return magnitude(read_cfl(path).data);
}

}  // namespace radstream::reftest
