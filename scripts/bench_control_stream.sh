#!/bin/sh
# Wall time of a filter, plain and following a control stream, over the benchmark's 5 M-row
# events file (docs/benchmarks.md, "A control stream"). Prints "QUERY CHANGES MS" per run.
# usage: scripts/bench_control_stream.sh DIR RUNS
#   DIR holds: anduin (the binary), ev5m.csv (shared/bench/gen_events.py 5000000), plain.flow
#   (examples/sensors.flow with `param event_time = "ts"` on the reader), controlled.flow
#   (examples/sensors_controlled.flow), changes.csv (a change every 100 s of event time) and
#   changes_1s.csv (one every second).
set -eu
cd "$1"
RUNS=$2
for i in $(seq "$RUNS"); do
  for q in plain:changes.csv controlled:changes.csv controlled:changes_1s.csv; do
    f=${q%%:*}; c=${q#*:}; rm -f out.csv
    s=$(date +%s%N); ./anduin run $f.flow -q --no-api --var INPUT=ev5m.csv --var CHANGES=$c --var OUTPUT=out.csv 2>/dev/null; e=$(date +%s%N)
    echo "$f $c $(( (e - s) / 1000000 ))"
  done
done
