// The analytic radial phantom scanner: multi-coil k-space of the modified Shepp-Logan phantom computed
// exactly from its ellipses, smooth analytic coil sensitivities, complex Gaussian noise at a given SNR, an
// optional moving bright ellipse (a catheter tip), any angle scheme. Spoke i is a pure function of
// (parameters, i). With several slices, spoke i is slice i mod N's spoke i / N (its own angle sequence
// and noise), acquired at time i / rate.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/spoke.hpp"
#include "core/stream_header.hpp"
#include "sim/coil_maps.hpp"
#include "sim/phantom.hpp"
#include "sim/stack_phantom.hpp"

namespace radstream {

struct SimParams {
  int matrix = 256;
  double readout_os = 2.0;  // samples per spoke = readout_os x matrix
  int coils = 8;
  std::string angles = "golden";  // linear180 | linear360 | golden | tiny-golden | turns
  int tiny_n = 5;
  int spokes_per_rotation = 256;  // for linear schemes; spokes per frame for turns
  int turns = 5;                  // turns: frames until the angles repeat
  double snr = 0.0;               // RMS signal / RMS noise of the k-space samples; 0 = no noise
  bool motion = false;            // a small bright ellipse moving along a figure-of-eight
  double motion_period_s = 4.0;
  double rate_hz = 400.0;  // spokes per second (sets the acquisition timestamps and the motion)
  double fov_mm = 256.0;
  std::uint64_t seed = 1;
  int slices = 1;      // slices interleaved in the stream (idx.slice = spoke mod slices), each its own plane
  int partitions = 1;  // > 1: a stack of stars (the 3D phantom), kz partitions of every in-plane angle
  std::string partition_order = "linear";  // linear | centre-out: the partitions' order at each angle
  double partition_rotation_deg = 0.0;     // partition p's spokes turned in plane by p x this

  // Reads the `simulate:` section of a config over the defaults. Throws ConfigError naming a bad key.
  static SimParams from_config(const YAML::Node& node);

  template <class V>
  void visit(V& v) {
    v.field("matrix", matrix, 8, 4096, "reconstructed matrix N (image N x N)");
    v.field("readout_oversampling", readout_os, 1.0, 8.0, "readout oversampling (samples per spoke / N)");
    v.field("coils", coils, 1, 64, "receive coils");
    v.field(
        "angles", angles,
        "angle scheme: linear180|linear360|golden|tiny-golden|turns (turns: frames of spokes_per_rotation "
        "spokes, each turned by 1/turns of the spoke spacing, as BART's traj -r -t)");
    v.field("tiny_golden_n", tiny_n, 2, 10, "order N of the tiny golden angle 180/(phi+N-1)");
    v.field("spokes_per_rotation", spokes_per_rotation, 1, 1 << 20,
            "spokes per rotation of the linear schemes; spokes per frame of turns");
    v.field("turns", turns, 1, 1024, "turns: frames until the angles repeat (BART's traj -t)");
    v.field("snr", snr, 0.0, 1e9, "k-space SNR (RMS signal / RMS noise); 0 = noiseless");
    v.field("motion", motion, "add a moving catheter-tip ellipse");
    v.field("motion_period_s", motion_period_s, 0.1, 3600.0, "period of the tip's path in seconds");
    v.field("rate_hz", rate_hz, 1.0, 1e6, "spokes per second");
    v.field("fov_mm", fov_mm, 1.0, 10000.0, "field of view in mm");
    v.field("seed", seed, std::uint64_t(0), ~std::uint64_t(0), "noise seed");
    v.field(
        "slices", slices, 1, 16,
        "slices interleaved spoke by spoke (idx.slice 0..N-1); slice k shows the phantom turned by k x 90 "
        "degrees and shrunk by 8 % per slice, each slice with its own angle sequence");
    v.field(
        "partitions", partitions, 1, 1024,
        "> 1: a stack of stars of the 3D phantom (its tip moving in 3D with --motion): each in-plane angle "
        "in every kz partition (idx.kspace_encode_step_2) before the next; the frames are volumes");
    v.field("partition_order", partition_order,
            "the partitions' order at each angle: linear (0..P-1) or centre-out (kz = 0, +1, -1, +2, ...)");
    v.field("partition_rotation_deg", partition_rotation_deg, -360.0, 360.0,
            "a stack of stars with partitions turned against each other: partition p's spokes turned in "
            "plane by p x this many degrees (0: every partition at the same angles)");
  }
};

class Simulator {
 public:
  explicit Simulator(const SimParams& p);  // throws ConfigError naming a bad value

  const StreamHeader& header() const { return header_; }
  const SimParams& params() const { return p_; }
  int samples() const { return header_.samples; }

  // The phantom's ellipses at time t seconds (with the tip when motion is on), as slice `slice` sees them.
  std::vector<Ellipse> ellipses_at(double t, int slice = 0) const;
  // Noiseless k-space of coil c at k (cycles/pixel) for the phantom `e`.
  std::complex<double> kspace(const std::vector<Ellipse>& e, int coil, double kx, double ky) const;

  // Where stream spoke `global` belongs: its slice, its (in-plane) spoke index and its kz partition.
  SpokeHeader place(std::uint64_t global) const;
  // A stack of stars' object (null in 2D): its tip's path, its ellipsoids, its coil sensitivities.
  const StackPhantom* stack() const { return stack_.get(); }

  Spoke spoke(std::uint64_t index) const;
  // Spokes [first, first + count), computed in parallel.
  std::vector<Spoke> spokes(std::uint64_t first, int count) const;

 private:
  SimParams p_;
  StreamHeader header_;
  CoilMaps coils_;
  std::shared_ptr<const StackPhantom> stack_;
  std::vector<std::uint16_t> partition_order_;  // the partition acquired at each position of an angle
  double noise_sigma_ = 0.0;
  // Noiseless k-space of coil c at sample k (cycles/pixel) of spoke `h` at time t.
  void fill_spoke(const SpokeHeader& h, double t, Spoke& s) const;
};

}  // namespace radstream
