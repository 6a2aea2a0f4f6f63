#!/bin/sh
# The output gap of a rescale (docs/benchmarks.md, "Live rescale: the output gap"): the longest
# wall-clock pause between two consecutive output rows of a keyed window at a steady input
# rate when its parallelism goes from 2 to 4 mid-run, rescaled live (`anduin ctl scale`) and by
# stop-and-restore (`anduin ctl stop`, then a run resumed from the last checkpoint at
# --parallelism 4, which re-cuts the state by key group).
#
# usage: scripts/bench_rescale_gap.sh ANDUIN RUNS
#   Prints one line per run and way: "WAY gap_ms=G around_ms=A baseline_ms=B rows=N
#   state_bytes=S", G the longest pause in the run, A the longest from 100 ms before the
#   rescale to 2 s after it (on a loaded machine G may come from elsewhere), B the longest
#   before the rescale (the query's own rhythm: a
#   window closes every 10 ms of wall time, sources send what they hold every 5 ms), S the
#   window's state when it was rescaled; then its latency line (gap.py: each output row's
#   wall-clock delay after the last row that went into it entered the query, p50/p99/max, before
#   and in the 2 s after the rescale); with TIMELINE=1 the rows written and the largest latency
#   per 250 ms from 1 s before the rescale to 2 s after it.
#   LARGE=1: a large state instead (50 000 events a second, 600 000 of them, sliding windows of
#   300 s of event time every 1 s per sensor: 300 panes for each of 1 000 sensors once full;
#   rescaled 9 s in).
#   PATTERN=1: a pattern per sensor instead of the window (`A B` with B's value above A's,
#   skip past last row: a match every other row or so of each sensor; rescaled 3 s in).
#   GROW=1: the live run starts with --max-parallelism 2, so that the rescale to 4 starts two
#   instances while it runs (growth beyond the instances planned) instead of handing key
#   groups to two that wait.
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
  param count = @COUNT@
  param rate = @RATE@
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "entered", type = "map" {
  input name = "events"
  param columns = "*, CAST(PROCTIME() AS BIGINT) AS in_ms"
  output name = "timed"
}
operator name = "w", type = "window" {
  input name = "timed"
  param kind = "@KIND@"
  param size = "@SIZE@"
  @SLIDE@
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total, MAX(in_ms) AS last_in"
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

if [ "${LARGE:-}" ]; then
  sed -i -e 's/@KIND@/sliding/' -e 's/@SIZE@/300s/' -e 's/@SLIDE@/param slide = "1s"/' \
    -e 's/@COUNT@/600000/' -e 's/@RATE@/50000/' "$W/q.flow"
  WAIT=9
else
  sed -i -e 's/@KIND@/tumbling/' -e 's/@SIZE@/100ms/' -e 's/@SLIDE@//' \
    -e 's/@COUNT@/120000/' -e 's/@RATE@/10000/' "$W/q.flow"
  WAIT=3
fi
if [ "${PATTERN:-}" ]; then
  python3 - "$W/q.flow" <<'PY'
import re, sys
path = sys.argv[1]
q = open(path).read()
pattern = '''operator name = "w", type = "pattern" {
  input name = "timed"
  param partition_by = "sensor"
  param order_by = "ts"
  param pattern = "A B"
  param define = "B AS B.value > A.value"
  param measures = "COUNT(*) AS n, LAST(in_ms) AS last_in"
  output name = "counts"
}'''
q = re.sub(r'operator name = "w", type = "window" \{.*?\n\}', pattern, q, flags=re.S)
open(path, "w").write(q)
PY
fi

gap() { # $1: output (file or directory of parts), $2: rescale instant (ms)
  python3 "$HERE/gap.py" "$1" "$2" "${TIMELINE:-}"
}

# The bytes of state of w's instances, from the API at port $1.
state_bytes() {
  python3 -c "import json,sys,urllib.request; m=json.load(urllib.request.urlopen('http://127.0.0.1:$1/api/v1/queries/q/metrics')); print(sum(i.get('state_bytes') or 0 for i in m['instances'] if i['operator']=='w'))"
}

# Prints the gap line and the latency line of way $1 whose output is $2.
report() {
  g=$(gap "$2" "$at")
  set -- "$1" $(echo "$g" | head -n 1)
  echo "$1 gap_ms=$2 around_ms=$5 baseline_ms=$3 rows=$4 state_bytes=$bytes"
  echo "$g" | tail -n +2 | sed "s/^/  /"
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Waits until the run has written rows for 3 s of wall time (the API answers by then).
settle() { sleep "$WAIT"; }

for i in $(seq "$RUNS"); do
  # Live: two instances of w own its key groups, two wait (GROW=1: none wait, two start);
  # scaled to 4 while running.
  C="$W/live$i"; mkdir -p "$C"; PORT=$((47300 + i))
  if [ "${GROW:-}" ]; then MAX=2; else MAX=4; fi
  (cd "$C" && "$A" run "$W/q.flow" -q --name q --linger 5ms --parallelism 2 --max-parallelism $MAX \
     --api 127.0.0.1:$PORT --var OUTPUT="$C/out.csv" 2>"$C/run.log") &
  RP=$!; PIDS="$PIDS $RP"
  settle
  bytes=$(state_bytes $PORT)
  at=$(now_ms); "$A" ctl scale q w 4 --api 127.0.0.1:$PORT >/dev/null
  wait $RP || { echo "live: the run failed: $(cat "$C/run.log")" >&2; exit 1; }
  report live "$C/out.csv"

  # Stop-and-restore: the same run with checkpoints, stopped at the same point and resumed
  # at parallelism 4.
  C="$W/stop$i"; mkdir -p "$C"; PORT=$((47400 + i))
  (cd "$C" && "$A" run "$W/q.flow" -q --name q --linger 5ms --parallelism 2 --checkpoint-dir ck \
     --checkpoint-interval 1s --api 127.0.0.1:$PORT --var OUTPUT="$C/out" 2>"$C/run.log") &
  RP=$!; PIDS="$PIDS $RP"
  settle
  bytes=$(state_bytes $PORT)
  at=$(now_ms); "$A" ctl stop q --api 127.0.0.1:$PORT >/dev/null
  wait $RP || { echo "stop: the run failed: $(cat "$C/run.log")" >&2; exit 1; }
  (cd "$C" && "$A" run "$W/q.flow" -q --name q --linger 5ms --parallelism 4 --checkpoint-dir ck \
     --checkpoint-interval 1s --no-api --var OUTPUT="$C/out" 2>"$C/resume.log") \
    || { echo "stop: the resumed run failed: $(cat "$C/resume.log")" >&2; exit 1; }
  report stop-and-restore "$C/out"
  wait 2>/dev/null || true; PIDS=""
done
