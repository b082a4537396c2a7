// radstream batch: offline replay of many recordings under many parameter sets (batch/batch_run.hpp).
#include <cstdlib>

#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "batch/batch_run.hpp"

namespace radstream::app {

namespace {

// A batch started without a launcher (no mpirun, srun) is an MPI singleton: Open MPI then tries to start or
// reach its runtime daemon first, which costs 5 s where that cannot be done (seen in a container); the
// isolated singleton needs none. A value the user set is kept.
void isolate_a_singleton() {
  for (const char* launched : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(launched)) return;
  ::setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
}

}  // namespace

Runner add_batch(CLI::App& app) {
  DeclaredOptions::Style style;
  style.required = {"files", "param_sweep", "out"};
  auto run = declared_command(app, "batch", BatchRun{}, style, [](const BatchRun& a) {
    isolate_a_singleton();
    BatchComm comm;
    return run_batch(a, comm);
  });
  app.footer(
      "Under MPI: mpirun -np N radstream batch ... (rank 0 hands out items, ranks 1..N-1 work, one per GPU); "
      "Slurm: srun -n N radstream batch ..., or sbatch --array=0-N-1 with --shard $SLURM_ARRAY_TASK_ID/N "
      "(one "
      "process per task, the same --out). A rerun skips done items.");
  return run;
}

}  // namespace radstream::app
