#!/bin/sh
# The output gap of a rescale (docs/benchmarks.md, "Live rescale: the output gap"): the longest
# wall-clock pause between two consecutive output rows of a keyed window at a steady input
# rate when its parallelism goes from 2 to 4 mid-run, rescaled live (`anduin ctl scale`) and by
# stop-and-restore (`anduin ctl stop`, then a run resumed from the last checkpoint at
# --parallelism 4, which re-cuts the state by key group).
#
# usage: scripts/bench_rescale_gap.sh ANDUIN RUNS
#   Prints one line per run and way: "WAY gap_ms=G baseline_ms=B rows=N", G the longest pause
#   in the run, B the longest before the rescale (the query's own rhythm: a window closes every
#   10 ms of wall time, sources send what they hold every 5 ms), and with TIMELINE=1 the rows
#   written per 250 ms from 1 s before the rescale to 2 s after it.
set -eu
A=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); RUNS=$2
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d); PIDS=""
cleanup() { for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; if [ "${KEEP:-}" ]; then echo "kept $W" >&2; else rm -rf "$W"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

cat > "$W/q.flow" <<'Q'
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 120000
  param rate = 10000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "100ms"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total"
  output name = "counts"
}
operator name = "stamp", type = "map" {
  input name = "counts"
  param columns = "*, CAST(PROCTIME() AS BIGINT) AS seen_ms"
  output name = "stamped"
}
operator name = "out", type = "writer" {
  input name = "stamped"
  param path = "${OUTPUT}"
}
Q

gap() { # $1: output (file or directory of parts), $2: rescale instant (ms)
  python3 "$HERE/gap.py" "$1" "$2" "${TIMELINE:-}"
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Waits until the run has written rows for 3 s of wall time (the API answers by then).
settle() { sleep 3; }

for i in $(seq "$RUNS"); do
  # Live: two instances of w own its key groups, two wait; scaled to 4 while running.
  C="$W/live$i"; mkdir -p "$C"; PORT=$((47300 + i))
  (cd "$C" && "$A" run "$W/q.flow" -q --name q --linger 5ms --parallelism 2 --max-parallelism 4 \
     --api 127.0.0.1:$PORT --var OUTPUT="$C/out.csv" 2>"$C/run.log") &
  RP=$!; PIDS="$PIDS $RP"
  settle
  at=$(now_ms); "$A" ctl scale q w 4 --api 127.0.0.1:$PORT >/dev/null
  wait $RP || { echo "live: the run failed: $(cat "$C/run.log")" >&2; exit 1; }
  set -- $(gap "$C/out.csv" "$at")
  echo "live gap_ms=$1 baseline_ms=$2 rows=$3"

  # Stop-and-restore: the same run with checkpoints, stopped at the same point and resumed
  # at parallelism 4.
  C="$W/stop$i"; mkdir -p "$C"; PORT=$((47400 + i))
  (cd "$C" && "$A" run "$W/q.flow" -q --name q --linger 5ms --parallelism 2 --checkpoint-dir ck \
     --checkpoint-interval 1s --api 127.0.0.1:$PORT --var OUTPUT="$C/out" 2>"$C/run.log") &
  RP=$!; PIDS="$PIDS $RP"
  settle
  at=$(now_ms); "$A" ctl stop q --api 127.0.0.1:$PORT >/dev/null
  wait $RP || { echo "stop: the run failed: $(cat "$C/run.log")" >&2; exit 1; }
  (cd "$C" && "$A" run "$W/q.flow" -q --name q --linger 5ms --parallelism 4 --checkpoint-dir ck \
     --checkpoint-interval 1s --no-api --var OUTPUT="$C/out" 2>"$C/resume.log") \
    || { echo "stop: the resumed run failed: $(cat "$C/resume.log")" >&2; exit 1; }
  set -- $(gap "$C/out" "$at")
  echo "stop-and-restore gap_ms=$1 baseline_ms=$2 rows=$3"
  wait 2>/dev/null || true; PIDS=""
done
