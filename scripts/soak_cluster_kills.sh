#!/bin/sh
# Soak: the cluster's worker-kill scenarios (a coordinator and three workers; one worker killed
# with SIGKILL at a seeded moment: after a seeded checkpoint and a seeded number of rows more;
# the output must equal the embedded run's) for SEEDS seeds instead of the suite's ten
# (checkpoints in a directory; one seed in five runs Q2 over the million-row file, the others a
# windowed query) and one (Q2, checkpoints in an S3-compatible store, a moto server).
# usage: scripts/soak_cluster_kills.sh [--whole] [SEEDS]   (default 100)
#   By default per-task recovery (the coordinator's default): only the dead worker's instances
#   are restored, and the query must stay at its first attempt unless it was finishing.
#   --whole: with `anduin coordinator --no-per-task-recovery`: the whole query rolls back.
set -eu
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--whole" ]; then
  shift
  ANDUIN_SOAK_SEEDS=${1:-100} exec cargo nextest run -p anduin-cli --test scenarios \
    -E 'test(/::a_worker_killed_mid_run_with_no_per_task_recovery_rolls_the_whole_query_back$/)' \
    --no-capture
fi
ANDUIN_SOAK_SEEDS=${1:-100} exec cargo nextest run -p anduin-cli --test scenarios \
  -E '(test(/^a_worker_killed_mid_run_costs_the_cluster_nothing_of_its_output::/) | test(/^a_cluster_checkpointing_to_s3_loses_nothing_to_a_killed_worker_or_a_restarted_coordinator::/)) & test(/a_worker_killed/) - test(/no_per_task/)' \
  --no-capture
