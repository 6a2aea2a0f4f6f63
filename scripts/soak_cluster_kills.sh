#!/bin/sh
# Soak: the cluster's worker-kill scenario (a coordinator and three workers; one worker killed
# with SIGKILL after a seeded number of checkpoints; the output must equal the embedded run's)
# for SEEDS seeds instead of the suite's ten.
# usage: scripts/soak_cluster_kills.sh [--per-task] [SEEDS]   (default 100)
#   --per-task: with `anduin coordinator --per-task-recovery` (experimental): only the dead
#   worker's instances are restored, and the query must stay at its first attempt.
set -eu
cd "$(dirname "$0")/.."
filter='test(=a_worker_killed_mid_run_costs_the_cluster_nothing_of_its_output)'
ignored=default
if [ "${1:-}" = "--per-task" ]; then
  shift
  filter='test(=a_worker_killed_mid_run_with_per_task_recovery_restores_its_instances_alone)'
  ignored=only
fi
ANDUIN_SOAK_SEEDS=${1:-100} exec cargo nextest run -p anduin-cli \
  --test a_worker_killed_mid_run_costs_the_cluster_nothing_of_its_output \
  --run-ignored "$ignored" -E "$filter" --no-capture
