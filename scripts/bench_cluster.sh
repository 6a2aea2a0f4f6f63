#!/bin/sh
# The network data plane and the cluster beside the embedded engine (docs/benchmarks.md,
# "Across processes"). Prints one line per run: "WHAT MS".
# usage: scripts/bench_cluster.sh DIR RUNS
#   DIR holds anduin (the binary to measure) and ev5m.csv (shared/bench/gen_events.py 5000000).
#   - q1-local / q1-tcp: Q1 with every operator a task (--no-chaining), its channels in-process
#     or across loopback TCP between two workers of one process (--loopback-workers 2: the
#     reader's 5 M rows cross one edge, the filter's 2.1 M another).
#   - q2-embedded / q2-cluster, q4-…: Q2 and Q4 at parallelism 4, embedded or on a coordinator
#     and 3 local worker processes (`anduin cluster`), both with checkpoints (one, at the end).
#   - recovery: a rate-limited generator on 3 workers, checkpoints every second; a worker is
#     killed with SIGKILL; prints the ms from the kill until the query runs again (per-task
#     recovery, the default: the dead worker's instances restored on the others, the
#     coordinator's log says so; RECOVERY=whole: `--no-per-task-recovery`, attempt 2 runs)
#     and until its first checkpoint after the kill completes (when the restored instances'
#     output becomes visible: the writer commits at checkpoints).
set -eu
DIR=$(cd "$1" && pwd); RUNS=$2
REPO=$(cd "$(dirname "$0")/.." && pwd)
A="$DIR/anduin"; W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
[ "${SKIP_THROUGHPUT:-}" ] || for i in $(seq "$RUNS"); do
  s=$(date +%s%N); "$A" run "$REPO/examples/q1.flow" -q --no-api --no-chaining --var INPUT="$DIR/ev5m.csv" --var OUTPUT="$W/q1.csv"; echo "q1-local $(ms $s)"
  s=$(date +%s%N); "$A" run "$REPO/examples/q1.flow" -q --no-api --no-chaining --loopback-workers 2 --var INPUT="$DIR/ev5m.csv" --var OUTPUT="$W/q1.csv"; echo "q1-tcp $(ms $s)"
  for q in q2 q4; do
    rm -rf "$W/out" "$W/ck"
    s=$(date +%s%N); "$A" run "$REPO/examples/$q.flow" -q --no-api --parallelism 4 --checkpoint-dir "$W/ck" --var INPUT="$DIR/ev5m.csv" --var OUTPUT="$W/out"; echo "$q-embedded $(ms $s)"
    rm -rf "$W/out" "$W/cl"
    s=$(date +%s%N); "$A" cluster --workers 3 --dir "$W/cl" "$REPO/examples/$q.flow" --parallelism 4 --var INPUT="$DIR/ev5m.csv" --var OUTPUT="$W/out" 2>/dev/null; echo "$q-cluster $(ms $s)"
  done
done

# Recovery after a worker's SIGKILL.
cat > "$W/slow.flow" <<'Q'
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = 3000000
  param rate = 100000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
Q
for i in $(seq "$RUNS"); do
  C="$W/rc$i"; mkdir -p "$C"
  FLAGS=""; [ "${RECOVERY:-per-task}" = whole ] && FLAGS="--no-per-task-recovery"
  "$A" coordinator --listen 127.0.0.1:0 --state-dir "$C/state" --checkpoint-store "$C/ck" --address-file "$C/addr" $FLAGS 2>"$C/coord.log" &
  CP=$!
  while [ ! -s "$C/addr" ]; do sleep 0.05; done
  ADDR=$(cat "$C/addr"); WP=""
  for w in 0 1 2; do "$A" worker --coordinator "$ADDR" --name "w$w" --work-dir "$C/w$w" 2>"$C/w$w.log" & WP="$WP $!"; done
  # Every worker registered before the query is placed, so that each runs a part of it.
  until [ "$("$A" status --coordinator "$ADDR" 2>/dev/null | grep -c ' slots, alive')" -ge 3 ]; do sleep 0.05; done
  (cd "$W" && "$A" submit --coordinator "$ADDR" --wait "$W/slow.flow" --parallelism 3 --no-chaining --checkpoint-interval 1s --var OUTPUT="$C/out" 2>"$C/submit.log") &
  SP=$!
  st() { "$A" status slow --coordinator "$ADDR" --json 2>/dev/null || echo '{}'; }
  until st | grep -q '"last_checkpoint": [3-9]'; do sleep 0.05; done
  VICTIM=$(echo $WP | cut -d' ' -f2)
  before=$(st | sed -n 's/.*"last_checkpoint": \([0-9]*\).*/\1/p')
  s=$(date +%s%N); kill -9 "$VICTIM"
  if [ "${RECOVERY:-per-task}" = whole ]; then
    until st | grep -q '"attempt": 2' && st | grep -q '"state": "running"'; do sleep 0.01; done
  else
    until grep -q 'instances restored; no other task was restarted' "$C/coord.log"; do sleep 0.01; done
  fi
  r=$(ms $s)
  until [ "$(st | sed -n 's/.*"last_checkpoint": \([0-9]*\).*/\1/p')" -gt "$before" ]; do sleep 0.01; done
  echo "recovery-running $r"
  echo "recovery-first-checkpoint $(ms $s)"
  wait $SP || true
  kill $WP $CP 2>/dev/null || true; wait 2>/dev/null || true
done
