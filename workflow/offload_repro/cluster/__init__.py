"""How rows run on a SLURM cluster: their jobs, time limits, srun launch and containers, each
rank's start and record, and the preflight that checks the cluster before any row is submitted."""
