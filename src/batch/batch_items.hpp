// radstream batch's work: the items are (recorded file, parameter set) pairs; each is replayed
// offline through the reconstruction (sliding-window frames of the set's window and stride) into one output
// named by the hash of its input and parameters:
//   OUT/<id>.cfl/.hdr  the frames, complex [N N frames]
//   OUT/<id>.json      what made it (file, set, parameters, frames, time, rank): written last, so it marks
//   the
//                      item done; a rerun skips done items and makes only the missing ones.
// <id> = 16 hex digits of FNV-1a 64 over the file's bytes and the set's resolved parameters (every key of
// `frames:` and `recon:`, defaults included; the set's name is not part of it).
// Parameter sweep file (YAML):
//   sets:
//     - name: gridding-64        # a label for logs and the metrics
//       frames: {window: 64, stride: 32}
//       recon: {method: gridding}
// Unknown keys are errors, named with the set. FFTW plans with `estimate` unless a set names fftw_planner
// (measure times its candidates, so two runs could round differently): outputs are byte-identical whatever
// the number of ranks.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "recon/recon_params.hpp"
#include "stream/run_config.hpp"

namespace radstream::app {

struct SweepSet {
  std::string name;
  FrameParams frames;
  ReconParams recon;
  std::string canonical;  // every resolved key=value, the hashed form
};

std::vector<SweepSet> read_param_sweep(const std::string& path);
// Paths given on the command line; one ending in .txt or .list is a file of paths (one a line, # comments,
// relative to the list's folder).
std::vector<std::string> expand_file_list(const std::vector<std::string>& args);

struct BatchItem {
  std::size_t index = 0;
  std::string file;
  std::size_t set = 0;  // into the sets
  std::string id;       // the hash, 16 hex digits
};

// Every file x every set, in that order; reads each file once to hash it. Throws IoError for an unreadable
// file (before any work starts).
std::vector<BatchItem> plan_items(const std::vector<std::string>& files, const std::vector<SweepSet>& sets);

bool item_done(const std::string& out_dir, const BatchItem& item);

struct ItemResult {
  bool ok = false;
  std::string error;  // when not ok
  int frames = 0;
  double seconds = 0;
};

// Reconstructs the item's frames and writes its outputs (temporary names, renamed when complete). Never
// throws: a failure is returned with its reason (the item stays missing). `rank` goes into the record;
// done_before (items this rank finished before) is for the fault injection below.
// threads: the CPU threads this worker may use (0: all; several workers on one node share the cores, and
// oversubscribed OpenMP teams spin each other to a crawl). Not part of the item's hash: it does not change
// the result.
ItemResult run_item(const BatchItem& item, const SweepSet& set, const std::string& out_dir, int rank,
                    int done_before, int threads = 0);

// Fault injection for the tests (RADSTREAM_BATCH_DIE="RANK:ITEMS"): rank RANK kills itself with SIGKILL in
// the middle of its (ITEMS+1)-th item, after its image file is written and before the record that marks it
// done. Unset: nothing.
void maybe_die_mid_item(int rank, int items_done_by_rank);

}  // namespace radstream::app
