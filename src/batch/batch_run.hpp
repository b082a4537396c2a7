// radstream batch: many recordings under many parameter sets, spread over MPI ranks (batch_run.cpp says how).
#pragma once
#include <string>
#include <vector>

#include "batch/batch_comm.hpp"

namespace radstream::app {

struct BatchRun {
  std::vector<std::string> files;
  std::string sweep, out, metrics, shard;

  template <class V>
  void visit(V& v) {
    v.field("files", files, "recordings (.h5), or a .txt/.list file of them (one a line)");
    v.field("param_sweep", sweep, "YAML of parameter sets (sets: [{name, frames, recon}])");
    v.field("out", out, "output folder: <hash>.cfl/.hdr/.json per item, batch-metrics.json");
    v.field("metrics", metrics, "write the gathered metrics here instead of OUT/batch-metrics.json");
    v.field("shard", shard,
            "I/N: take only the recordings whose position mod N is I, under every set (a Slurm array task: "
            "$SLURM_ARRAY_TASK_ID/N)");
  }
};

// Runs this rank's part. Returns the exit status: 0 every item done, 1 some failed, 2 bad options (named in
// the log).
int run_batch(const BatchRun& run, BatchComm& comm);

}  // namespace radstream::app
