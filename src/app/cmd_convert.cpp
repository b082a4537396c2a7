// radstream convert: an MRD file into another MRD format (--input F.h5 --out F.mrd or F.mrd2, or back), or
// real radial data from BART's .cfl pair into an MRD .h5 stream file, so that scanner data (e.g.
// ../shared/data/real/) can be replayed into a live pipeline and watched: one acquisition per spoke with its
// own trajectory (cycles per pixel), its angle from the trajectory, acquisition times spaced at
// --rate, the radstream envelope fields (so that `replay` paces it), and the spokes repeated --repeat times
// to make a longer stream of the same frame.
#include <cmath>
#include <filesystem>

#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/bart_mrd.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_check.hpp"
#include "io/mrd_file.hpp"
#include "io/mrd_raw.hpp"
#include "io/mrd_reader.hpp"
#include "io/output_path.hpp"

namespace radstream::app {
namespace {

struct ConvertArgs {
  std::string traj, kspace, input, out;
  int matrix = 0, repeat = 1;
  double rate_hz = 100, fov_mm = 256;
  bool overwrite = false;

  template <class V>
  void visit(V& v) {
    v.field("traj", traj, "BART trajectory [3 samples spokes] in BART units (+-N/2)");
    v.field("kspace", kspace, "BART k-space [1 samples spokes coils]");
    v.field("input", input,
            "an MRD file (HDF5 or stream, told by its first bytes) to copy into --out's format (instead of "
            "--traj/--kspace)");
    v.field("matrix", matrix, 0, 1 << 14, "image matrix N of the trajectory's units");
    v.field("out", out, "MRD file to write: .h5 (HDF5), .mrd (an MRD stream file) or .mrd2 (MRD 2.2.1)");
    v.field("rate", rate_hz, 0.0, 1e9, "spokes per second of the acquisition times");
    v.field("repeat", repeat, 0, 1 << 20, "write the spokes this many times, as one longer stream");
    v.field("fov", fov_mm, 1.0, 10000.0, "field of view in mm, for the viewer's scale bar");
    v.field("overwrite", overwrite, "replace an existing output file");
  }
};

// An MRD file into the other format: the XML header and every acquisition verbatim.
int copy_mrd(const ConvertArgs& a) {
  check_output_file(a.out, "--out", a.overwrite);
  check_mrd_in_child(a.input);
  MrdReader in(a.input);
  stream_header_from_xml(in.xml(), a.input);
  MrdRawWriter out(a.out, in.xml());
  for (std::size_t i = 0; i < in.count(); ++i) {
    const RawSpoke r = in.read(i);
    out.append(r.acq_header, r.traj, r.data);
  }
  out.flush();
  log::info("convert: {} acquisitions of {} to {}", out.count(), a.input, a.out);
  return 0;
}

int run_convert(const ConvertArgs& a) {
  if (!a.input.empty()) {
    if (!a.traj.empty() || !a.kspace.empty())
      throw ConfigError(
          "--input copies an MRD file; --traj and --kspace convert BART data: give one or the other");
    return copy_mrd(a);
  }
  if (a.traj.empty() || a.kspace.empty())
    throw ConfigError(
        "convert needs --traj T.cfl --kspace K.cfl --matrix N (BART data) or --input F (an MRD file)");
  if (a.matrix <= 0) throw ConfigError("--matrix " + std::to_string(a.matrix) + " must be > 0");
  if (a.repeat < 1) throw ConfigError("--repeat " + std::to_string(a.repeat) + " must be >= 1");
  if (!(a.rate_hz > 0)) throw ConfigError("--rate " + std::to_string(a.rate_hz) + " must be > 0");
  check_output_file(a.out, "--out", a.overwrite);
  const Frame f = frame_from_bart(read_cfl(a.traj), read_cfl(a.kspace), a.matrix, a.traj + " + " + a.kspace);
  const std::size_t n = write_frame_as_mrd(a.out, f, BartToMrd{a.rate_hz, a.fov_mm, a.repeat});
  const Geometry& g = f.geometry;
  log::info("convert: {} spokes ({} spokes x {}, {} samples, {} coils) at {} spokes/s to {}", n, g.spokes,
            a.repeat, g.samples, g.coils, a.rate_hz, a.out);
  return 0;
}

}  // namespace

Runner add_convert(CLI::App& app) {
  DeclaredOptions::Style style;
  style.required = {"out"};
  return declared_command(app, "convert", ConvertArgs{}, style,
                          [](const ConvertArgs& a) { return run_convert(a); });
}

}  // namespace radstream::app
