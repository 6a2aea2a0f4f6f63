#!/bin/sh
# Coordinator failover (docs/benchmarks.md, "Coordinator failover"): two coordinators elect
# their leader by a lock file (`--leader-election file:///…`), three workers and the client
# know both; the leader is killed with SIGKILL after the query's 3rd checkpoint. Measured:
#   serving_ms: from the kill to the first `anduin status` the new leader answers with the
#               query (polled back to back; each poll is a process start, a few ms);
#   checkpoint_ms: from the kill to the first checkpoint the new leader completes;
#   gap_ms / around_ms / baseline_ms: the longest pause between two output rows over the run,
#               from 100 ms before the kill to 2 s after it, and before the kill (the query's
#               own rhythm; rows are stamped with PROCTIME after the window, see gap.py).
# The data path does not cross the coordinator: the workers go on processing while no
# coordinator leads; what waits is the checkpoints (and a part that would fail meanwhile).
#
# ELECTION=etcd or ELECTION=redlock elects through an etcd (started here, Debian's
# etcd-server) or by Redlock over 3 redis-servers (started here) instead of the lock file,
# with leases of LEASE (default 2s); COUNT rows (default 120000, at 10 000 a second) must
# outlast the lease.
#
# ELECTION=kubernetes elects by a Kubernetes Lease, the API played by scripts/fake_kube_leases.py
# (started here: Leases only, plain HTTP on loopback).
#
# STORE=s3 (with a lease-based ELECTION) keeps the checkpoints and the coordinators' catalog
# in an S3-compatible server (moto, from PyPI, started here) and gives each coordinator a state
# directory of its own: no shared file system (docs/cluster.md, "No shared file system").
#
# usage: [ELECTION=file|etcd|redlock|kubernetes] [STORE=dir|s3] [LEASE=2s] [COUNT=N] scripts/bench_failover.sh ANDUIN RUNS
set -eu
A=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); RUNS=$2
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d); PIDS=""; SPIDS=""
cleanup() { for p in $PIDS $SPIDS; do kill -9 "$p" 2>/dev/null || true; done; for p in $PIDS $SPIDS; do wait "$p" 2>/dev/null || true; done; if [ "${KEEP:-}" ]; then echo "kept $W" >&2; else rm -rf "$W"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

ELECTION=${ELECTION:-file}; LEASE=${LEASE:-2s}; COUNT=${COUNT:-120000}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
case "$ELECTION" in
  file) ;;
  etcd)
    P=$(free_port)
    etcd --data-dir "$W/etcd" --listen-client-urls "http://127.0.0.1:$P" \
      --advertise-client-urls "http://127.0.0.1:$P" --listen-peer-urls http://127.0.0.1:0 \
      --initial-advertise-peer-urls http://127.0.0.1:0 --initial-cluster default=http://127.0.0.1:0 \
      2>"$W/etcd.log" &
    SPIDS="$SPIDS $!"
    until curl -sf -X POST "http://127.0.0.1:$P/v3/kv/range" -d '{"key":"eA=="}' >/dev/null; do sleep 0.05; done
    SERVICE="etcd://127.0.0.1:$P" ;;
  redlock)
    SERVICE=""
    for r in 1 2 3; do
      P=$(free_port); mkdir -p "$W/redis$r"
      redis-server --port "$P" --bind 127.0.0.1 --save "" --appendonly no --dir "$W/redis$r" >/dev/null &
      SPIDS="$SPIDS $!"
      until redis-cli -p "$P" ping >/dev/null 2>&1; do sleep 0.05; done
      SERVICE="$SERVICE${SERVICE:+,}127.0.0.1:$P"
    done
    SERVICE="redlock://$SERVICE" ;;
  kubernetes)
    python3 -u "$HERE/fake_kube_leases.py" >"$W/kube.port" 2>"$W/kube.log" &
    SPIDS="$SPIDS $!"
    until [ -s "$W/kube.port" ]; do sleep 0.05; done
    KUBE="--kube-api http://127.0.0.1:$(cat "$W/kube.port") --kube-namespace bench" ;;
  *) echo "ELECTION is file, etcd, redlock or kubernetes" >&2; exit 2 ;;
esac
STORE=${STORE:-dir}
case "$STORE" in
  dir) ;;
  s3)
    [ "$ELECTION" != file ] || { echo "STORE=s3 needs ELECTION=etcd, redlock or kubernetes (a lock file needs a shared file system)" >&2; exit 2; }
    P=$(free_port)
    python3 -m moto.server -H 127.0.0.1 -p "$P" >"$W/moto.log" 2>&1 &
    SPIDS="$SPIDS $!"
    until curl -sf -X PUT "http://127.0.0.1:$P/bench" >/dev/null; do sleep 0.1; done
    export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 \
      AWS_ENDPOINT_URL="http://127.0.0.1:$P" ;;
  *) echo "STORE is dir or s3" >&2; exit 2 ;;
esac

cat > "$W/q.flow" <<'Q'
type name = "Event" {
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}
operator name = "gen", type = "generator" {
  param profile = "events"
  param count = COUNT
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

for i in $(seq "$RUNS"); do
  C="$W/run$i"; mkdir -p "$C/state"
  sed -i "s/param count = [0-9A-Z]*/param count = $COUNT/" "$W/q.flow"
  case "$ELECTION" in
    file) LOCK="file://$C/leader.lock" ;;
    kubernetes) LOCK="kubernetes://bench-run$i" ;;
    *) LOCK="$SERVICE/bench-run$i" ;;
  esac
  case "$STORE" in
    dir) CK="$C/ck"; S1="$C/state"; S2="$C/state" ;;
    s3) CK="s3://bench/run$i"; S1="$C/state1"; S2="$C/state2" ;;
  esac
  "$A" coordinator --listen 127.0.0.1:0 --state-dir "$S1" --checkpoint-store "$CK" \
    --address-file "$C/a1" --leader-election "$LOCK" --leader-lease "$LEASE" ${KUBE:-} 2>"$C/c1.log" &
  C1=$!; PIDS="$PIDS $C1"
  until grep -q ' leads (term' "$C/c1.log" 2>/dev/null; do sleep 0.02; done
  "$A" coordinator --listen 127.0.0.1:0 --state-dir "$S2" --checkpoint-store "$CK" \
    --address-file "$C/a2" --leader-election "$LOCK" --leader-lease "$LEASE" ${KUBE:-} 2>"$C/c2.log" &
  PIDS="$PIDS $!"
  until grep -q 'standing by' "$C/c2.log" 2>/dev/null; do sleep 0.02; done
  ADDR="$(cat "$C/a1"),$(cat "$C/a2")"
  for w in 0 1 2; do
    "$A" worker --coordinator "$ADDR" --name "w$w" --work-dir "$C/w$w" --slots 4 2>"$C/w$w.log" &
    PIDS="$PIDS $!"
  done
  until [ "$("$A" status --coordinator "$ADDR" 2>/dev/null | grep -c ' slots, alive')" -ge 3 ]; do sleep 0.05; done
  (cd "$W" && "$A" submit --coordinator "$ADDR" --wait q.flow --parallelism 3 --linger 5ms \
    --checkpoint-interval 500ms --var OUTPUT="$C/out" 2>"$C/submit.log") &
  SP=$!; PIDS="$PIDS $SP"
  st() { "$A" status q --coordinator "$ADDR" --json 2>/dev/null || echo '{}'; }
  until st | grep -q '"last_checkpoint": [3-9]'; do
    kill -0 $SP 2>/dev/null || { echo "the query ended early: $(cat "$C/submit.log")" >&2; exit 1; }
    sleep 0.02
  done
  set -- $(python3 - "$A" "$ADDR" "$C1" <<'PY'
import json, os, signal, subprocess, sys, time
a, addr, leader = sys.argv[1], sys.argv[2], int(sys.argv[3])
def status():
    r = subprocess.run([a, "status", "q", "--coordinator", addr, "--json"],
                       capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None
last = status()["last_checkpoint"]
kill_ms = time.time_ns() // 1_000_000
t0 = time.monotonic()
os.kill(leader, signal.SIGKILL)
serving = checkpoint = None
while checkpoint is None:
    s = status()
    if s is None:
        continue
    if serving is None:
        serving = (time.monotonic() - t0) * 1000
    if (s.get("last_checkpoint") or 0) > last or s.get("state") == "finished":
        checkpoint = (time.monotonic() - t0) * 1000
print(kill_ms, round(serving), round(checkpoint))
PY
)
  kill_ms=$1; serving=$2; ckpt=$3
  wait $SP || { echo "the query failed: $(cat "$C/submit.log")" >&2; exit 1; }
  set -- $(python3 "$HERE/gap.py" "$C/out" "$kill_ms")
  echo "run $i serving_ms=$serving checkpoint_ms=$ckpt gap_ms=$1 around_ms=$4 baseline_ms=$2 rows=$3"
  for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done
  # The run's processes only: the lock service lives on for the next run.
  for p in $PIDS; do wait "$p" 2>/dev/null || true; done; PIDS=""
done
