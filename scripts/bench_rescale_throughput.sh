#!/bin/sh
# Throughput before and after scaling out live (docs/benchmarks.md, "Live rescale"): the
# keyed window of bench_rescale_gap.sh (tumbling 1 s windows of event time per sensor, with
# the latency stamp) fed as fast as the generator goes, run at --parallelism 1 with
# --max-parallelism N, rescaled to N instances live (`anduin ctl scale q w N`) 8 s in.
#
# usage: scripts/bench_rescale_throughput.sh ANDUIN [N]
#   Prints the rows the window took each second ("t=S rows=R owners=O"), 8 s before the
#   rescale and 8 s after it, then the mean rows per second of each side (the second of the
#   rescale left out).
set -eu
A=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); N=${2:-2}
W=$(mktemp -d); RP=""
cleanup() { [ -n "$RP" ] && kill -9 "$RP" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$W"; }
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
  param count = 2000000000
  param event_time = "ts"
  output name = "events", type = "Event"
}
operator name = "w", type = "window" {
  input name = "events"
  param kind = "tumbling"
  param size = "1s"
  param time = "ts"
  param keys = "sensor"
  param aggregates = "COUNT(*) AS n, SUM(value) AS total, MAX(value) AS hi"
  output name = "counts"
}
operator name = "out", type = "writer" {
  input name = "counts"
  param path = "${OUTPUT}"
}
Q

PORT=47500
(cd "$W" && exec "$A" run q.flow -q --name q --parallelism 1 --max-parallelism "$N" \
   --api 127.0.0.1:$PORT --var OUTPUT=/dev/null 2>run.log) &
RP=$!
# The rows w took so far, and how many instances own its key groups.
sample() {
  python3 -c "
import json, urllib.request
base = 'http://127.0.0.1:$PORT/api/v1/queries/q'
m = json.load(urllib.request.urlopen(base + '/metrics'))
p = json.load(urllib.request.urlopen(base + '/operators/w/params'))
print(sum(i['rows_in'] for i in m['instances'] if i['operator'] == 'w'),
      next(x['value'] for x in p if x['name'] == 'parallelism'))"
}
sleep 3
set -- $(sample); last=$1
for t in $(seq 1 17); do
  [ "$t" = 9 ] && "$A" ctl scale q w "$N" --api 127.0.0.1:$PORT >/dev/null
  sleep 1
  set -- $(sample)
  echo "t=$t rows=$(( $1 - last )) owners=$2"
  echo "$t $(( $1 - last ))" >> "$W/rates"
  last=$1
done
python3 - "$W/rates" <<'P'
import sys
rows = dict(map(int, l.split()) for l in open(sys.argv[1]))
before = [rows[t] for t in range(1, 9)]
after = [rows[t] for t in range(10, 18)]
print("before: %.0f rows/s  after: %.0f rows/s  (x%.2f)" % (
    sum(before) / len(before), sum(after) / len(after),
    (sum(after) / len(after)) / (sum(before) / len(before))))
P
