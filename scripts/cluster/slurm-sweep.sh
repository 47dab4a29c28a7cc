#!/usr/bin/env bash
#SBATCH --job-name=recbench-sweep
#SBATCH --output=recbench-sweep-%A_%a.log
#SBATCH --cpus-per-task=2
# One shard of a recbench sweep per Slurm array task: the launcher only launches. Every
# task runs `recbench sweep … --shard $SLURM_ARRAY_TASK_ID/N`; all tasks write into the
# results folder the config names, which must be on storage every node sees. Submit from
# the folder the config's paths are relative to:
#
#   sbatch --array=1-N scripts/cluster/slurm-sweep.sh N --config Configs/ml-100k.yml --models Pop,EASE
#
# RECBENCH names the binary (default: recbench on PATH). Resubmitting a task (or the whole
# array) skips the runs it already finished; `recbench report RESULTS` tabulates them all.
set -euo pipefail
shards=${1:?usage: sbatch --array=1-N slurm-sweep.sh N SWEEP-ARGUMENTS...}
shift
task=${SLURM_ARRAY_TASK_ID:?submit with sbatch --array=1-$shards}
exec "${RECBENCH:-recbench}" sweep "$@" --shard "$task/$shards"
