#!/bin/sh
# The output gap of a worker's loss (docs/benchmarks.md, "Hot standby: the output gap"): the
# longest wall-clock pause between two consecutive output rows when the worker running the
# protected operator is killed with SIGKILL, for each fault-tolerance pattern, on one windowed
# query on a local cluster (a coordinator and one worker process per task).
#
# usage: scripts/bench_output_gap.sh ANDUIN RUNS
#   Prints one line per run: "PATTERN gap_ms=G around_ms=A baseline_ms=B", where G is the
#   longest pause in a run whose victim is killed after its 3rd checkpoint, A the longest from
#   100 ms before the kill to 2 s after it (a loaded machine's pauses elsewhere apart) and B
#   the longest in the same run's
#   output before the kill (the query's own rhythm: a window closes every 10 ms of wall time; sources send what they hold every 5 ms, `--linger 5ms`).
#   - hot-standby: the window in hot standby (two copies on distinct workers); the worker of
#     the active copy is killed. The selector goes on with the other copy.
#   - checkpoint: the window asks for checkpointing; its worker is killed; it is restored on
#     another worker from the last checkpoint (per-task recovery).
#   - standby: a stateless filter before the window asks for simple standby; its worker is
#     killed; it is started again on another worker.
# Each output row carries PROCTIME(), stamped after the window (after the selector): when it
# passed that map. Rows a restored operator replays are dropped downstream, so the gap is the
# time from the kill to the first new row.
set -eu
A=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); RUNS=$2
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d); PIDS=""
cleanup() { for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; if [ "${KEEP:-}" ]; then echo "kept $W" >&2; else rm -rf "$W"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

query() { # $1: the window's fault-tolerance params, $2: the filter's
cat <<Q
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
operator name = "f", type = "filter" {
  input name = "events"
  $2
  param condition = "value >= 0"
  output name = "kept"
}
operator name = "w", type = "window" {
  input name = "kept"
  $1
  param kind = "tumbling"
  param size = "100ms"
  param time = "ts"
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
  param path = "\${OUTPUT}"
}
Q
}

gap() { # $1: output file, $2: kill instant (ms): "gap baseline rows"
  python3 "$HERE/gap.py" "$1" "$2"
}

for i in $(seq "$RUNS"); do
  for pattern in ${PATTERNS:-hot-standby checkpoint standby}; do
    C="$W/$pattern$i"; mkdir -p "$C"
    case $pattern in
      hot-standby) query 'param fault_tolerance = "hot-standby"' '' > "$C/q.flow"; victim=w;;
      checkpoint) query 'param fault_tolerance = "checkpoint"' '' > "$C/q.flow"; victim=w;;
      standby) query '' 'param fault_tolerance = "standby"' > "$C/q.flow"; victim=f;;
    esac
    "$A" coordinator --listen 127.0.0.1:0 --state-dir "$C/state" --checkpoint-store "$C/ck" --address-file "$C/addr" 2>"$C/coord.log" &
    CP=$!; PIDS="$PIDS $CP"
    while [ ! -s "$C/addr" ]; do sleep 0.05; done
    ADDR=$(cat "$C/addr"); WP=""
    # One worker per task (7 with the copies and the selector), so that a kill takes one.
    for w in 0 1 2 3 4 5 6; do
      "$A" worker --coordinator "$ADDR" --name "w$w" --work-dir "$C/w$w" --slots 1 2>"$C/w$w.log" &
      WP="$WP $!"; PIDS="$PIDS $!"
    done
    until [ "$("$A" status --coordinator "$ADDR" 2>/dev/null | grep -c ' slots, alive')" -ge 7 ]; do sleep 0.05; done
    (cd "$C" && "$A" submit --coordinator "$ADDR" --wait q.flow --no-chaining --linger 5ms --checkpoint-interval 1s --var OUTPUT="$C/out" 2>"$C/submit.log") &
    SP=$!; PIDS="$PIDS $!"
    st() { "$A" status q --coordinator "$ADDR" --json 2>/dev/null || echo '{}'; }
    until st | grep -q '"last_checkpoint": [3-9]'; do
      kill -0 $SP 2>/dev/null || { echo "$pattern: the query ended early: $(cat "$C/submit.log")" >&2; exit 1; }
      sleep 0.02
    done
    worker=$(st | python3 -c "import json,sys; print(json.load(sys.stdin)['instances']['$victim'])")
    n=${worker#w}; pid=$(echo $WP | cut -d' ' -f$((n + 1)))
    kill_ms=$(( $(date +%s%N) / 1000000 )); kill -9 "$pid"
    wait $SP || { echo "$pattern: the query failed: $(cat "$C/submit.log")" >&2; exit 1; }
    set -- $(gap "$C/out" "$kill_ms")
    echo "$pattern gap_ms=$1 around_ms=$4 baseline_ms=$2 rows=$3"
    for p in $WP; do kill -9 "$p" 2>/dev/null || true; done
    kill "$CP" 2>/dev/null || true
    wait 2>/dev/null || true; PIDS=""
  done
done
