#!/bin/sh
# Soak: the cluster's worker-kill scenario (a coordinator and three workers; one worker killed
# with SIGKILL after a seeded number of checkpoints; the output must equal the embedded run's)
# for SEEDS seeds instead of the suite's ten.
# usage: scripts/soak_cluster_kills.sh [SEEDS]   (default 100)
set -eu
cd "$(dirname "$0")/.."
ANDUIN_SOAK_SEEDS=${1:-100} exec cargo nextest run -p anduin-cli \
  --test a_worker_killed_mid_run_costs_the_cluster_nothing_of_its_output --no-capture
