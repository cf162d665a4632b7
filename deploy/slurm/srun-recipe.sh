#!/bin/bash
# The same cluster without a batch script, from an interactive allocation:
#   salloc --nodes=2 --ntasks-per-node=8 --gpus-per-task=1
#   bash deploy/slurm/srun-recipe.sh
# It runs crucible.sbatch's steps in the foreground; Ctrl-C (or scancel of
# the allocation) stops them cleanly.
exec bash "$(dirname "$0")/crucible.sbatch" "$@"
