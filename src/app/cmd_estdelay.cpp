// radstream estdelay --traj T --kspace K: gradient delays from radial data by RING
// (noncart/gradient_delay.hpp), printed as bart estdelay prints them (x:y:xy, the triple bart traj -q takes),
// so either tool's output feeds the other.
#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "core/error.hpp"
#include "io/cfl.hpp"
#include "noncart/gradient_delay.hpp"

namespace radstream::app {

namespace {
struct EstdelayArgs {
  std::string traj, kspace;
  double region = 3.0;

  template <class V>
  void visit(V& v) {
    v.field("traj", traj, "BART trajectory [3 samples spokes]");
    v.field("kspace", kspace, "BART k-space [1 samples spokes coils] (the first of any further dimensions)");
    v.field("region", region, 0.5, 64.0, "largest delay searched, in samples");
  }
};

int run_estdelay(const EstdelayArgs& a) {
  const CflArray t = read_cfl(a.traj);
  const CflArray k = read_cfl(a.kspace);
  const long S = t.dim(1), P = t.dim(2);
  if (t.dim(0) != 3 || S < 4 || P < 2)
    throw InputError(a.traj + ": expected a radial trajectory [3 samples spokes]");
  if (k.dim(0) != 1 || k.dim(1) != S || k.dim(2) != P)
    throw InputError(
        fmt::format("{}: k-space [{} {} {}] does not match the trajectory's {} samples x {} spokes", a.kspace,
                    k.dim(0), k.dim(1), k.dim(2), S, P));
  const long C = k.dim(3);
  std::vector<float> traj(std::size_t(P * S * 2));
  for (long p = 0; p < P; ++p)
    for (long s = 0; s < S; ++s) {
      traj[std::size_t((p * S + s) * 2)] = t.data[std::size_t((p * S + s) * 3)].real();
      traj[std::size_t((p * S + s) * 2 + 1)] = t.data[std::size_t((p * S + s) * 3 + 1)].real();
    }
  std::vector<cfloat> data(std::size_t(C * P * S));
  for (long c = 0; c < C; ++c)
    for (long p = 0; p < P; ++p)
      for (long s = 0; s < S; ++s)
        data[std::size_t((c * P + p) * S + s)] = k.data[std::size_t((c * P + p) * S + s)];
  RingParams rp;
  rp.region = a.region;
  const GradientDelays d = estimate_delays_ring(traj, data, int(S), int(P), int(C), rp);
  std::printf("%s\n", d.str().c_str());
  return 0;
}
}  // namespace

Runner add_estdelay(CLI::App& app) {
  DeclaredOptions::Style style;
  style.required = {"traj", "kspace"};
  return declared_command(app, "estdelay", EstdelayArgs{}, style,
                          [](const EstdelayArgs& a) { return run_estdelay(a); });
}

}  // namespace radstream::app
