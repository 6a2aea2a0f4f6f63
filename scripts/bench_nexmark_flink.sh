#!/usr/bin/env bash
# Nexmark beside Flink on the same machine and the same events, in one sitting (issue 23;
# docs/benchmarks.md, "Nexmark beside Flink on the same machine").
#
# usage: scripts/bench_nexmark_flink.sh ANDUIN EVENTS [QUERIES]
#   ANDUIN   the anduin binary (a release build for figures)
#   EVENTS   events of the three kinds together, as `anduin bench nexmark --events`
#   QUERIES  q0,q5,... (default: every query of benches/nexmark)
# env: RATE (events/s of event time, default 200000), SEED (42), DATA (where the events go,
#   default /tmp/anduin-nexmark-csv-EVENTS-RATE-SEED, reused when it holds this dump; the
#   queries over its files are made afresh by bench/nexmark-csv/make.py into DATA/queries),
#   ANDUIN_PARALLELISM (1), FLINK_PARALLELISM (2), VENV (~/.cache/anduin-peers, where
#   bench/peers' install.sh put Flink), JAVA_HOME (Java 17),
#   CHECK=1: no timing; both engines write their results (OUT, default DATA/check) and
#   bench/peers/nexmark_normalize.py compares them (rows and checksum per query).
#
# Dumps the events with `anduin bench nexmark --dump` once, then for each query runs anduin
# (`anduin bench nexmark --dir DATA/queries`: the query over the dumped CSVs, into a
# discard sink; its wall time) and Flink (bench/peers/flink_nexmark_all.py: the same text over
# the same files, into a blackhole sink; its job time), one after the other, everything at
# nice 10, and prints a table: query, anduin s, flink s, flink/anduin. The date, the host, its
# load and the busiest other processes are printed before and after: quote them with the figures.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,22p' "$0"; exit 2; }
ANDUIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); EVENTS=$2
REPO=$(cd "$(dirname "$0")/.." && pwd)
RATE=${RATE:-200000}; SEED=${SEED:-42}
DATA=${DATA:-/tmp/anduin-nexmark-csv-$EVENTS-$RATE-$SEED}
AP=${ANDUIN_PARALLELISM:-1}; FP=${FLINK_PARALLELISM:-2}
VENV=${VENV:-$HOME/.cache/anduin-peers}; PY=$VENV/flink/bin/python
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
[ -x "$PY" ] || { echo "no Flink in $VENV/flink: see docs/benchmarks.md, \"Nexmark beside Flink on the same machine\"" >&2; exit 1; }
QDIR=$DATA/queries; rm -rf "$QDIR"; python3 "$REPO/bench/nexmark-csv/make.py" "$QDIR"
QUERIES=${3:-$(cd "$QDIR" && ls q*.sql | sed 's/\.sql$//' | sort -V | paste -sd,)}

sitting() {
  echo "# $1: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname) ($(nproc) cores); load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# busiest processes now (%cpu, command):"
  top -b -n 1 -o %CPU | awk 'NR > 7 && $9 > 0 { print "#   " $9 " " $12 }' | { grep -v -e ' top$' || true; } | head -5
}

sitting start
echo "# anduin: $ANDUIN ($("$ANDUIN" --version 2>/dev/null || echo '?')), parallelism $AP"
echo "# flink: apache-flink $("$VENV/flink/bin/pip" show apache-flink 2>/dev/null | sed -n 's/^Version: //p'), parallelism $FP, java $("$JAVA_HOME/bin/java" -version 2>&1 | head -1)"
echo "# events: $EVENTS at $RATE/s of event time, seed $SEED, in $DATA"

STAMP="$EVENTS $RATE $SEED"
if [ "$(cat "$DATA/dumped" 2>/dev/null)" != "$STAMP" ]; then
  rm -f "$DATA/person.csv" "$DATA/auction.csv" "$DATA/bid.csv" "$DATA/dumped"
  nice -n 10 "$ANDUIN" bench nexmark --dump "$DATA" --events "$EVENTS" --rate "$RATE" --seed "$SEED" 2>/dev/null | sed 's/^/# /'
  echo "$STAMP" > "$DATA/dumped"
fi

# The field $1 of the last JSON line on stdin, or "failed: " and the error.
json() { "$PY" -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d.get('$1', 'failed: ' + d.get('error', '?')[:80]))"; }

if [ "${CHECK:-}" = 1 ]; then
  OUT=${OUT:-$DATA/check}; rm -rf "$OUT/anduin" "$OUT/flink"; mkdir -p "$OUT/anduin" "$OUT/flink"
  printf '%-5s %11s %17s %11s %17s  %s\n' query anduin_rows anduin_checksum flink_rows flink_checksum agree
  summary() { "$PY" -c "import json,sys; d=json.load(sys.stdin); print(d['rows'], d['checksum'])"; }
  for q in ${QUERIES//,/ }; do
    a=$OUT/anduin/$q.csv; [ "$q" = q10 ] && a=$OUT/anduin/q10
    ar="- -"; fr="- -"; note=""
    if nice -n 10 "$ANDUIN" run "$QDIR/$q.sql" --var DATA="$DATA" --var OUTPUT="$a" \
        --var SIDE_INPUT="$QDIR/side_input.txt" --parallelism "$AP" -q > "$OUT/anduin/$q.log" 2>&1; then
      ar=$(python3 "$REPO/bench/peers/nexmark_normalize.py" "$q" "$a" | summary)
    else
      note="anduin failed (see $OUT/anduin/$q.log)"
    fi
    if nice -n 10 "$PY" "$REPO/bench/peers/flink_nexmark_all.py" "$DATA" "$q" --parallelism "$FP" --output "$OUT/flink" --queries-dir "$QDIR" > "$OUT/flink/$q.log" 2>&1; then
      fr=$(python3 "$REPO/bench/peers/nexmark_normalize.py" "$q" "$OUT/flink/$q.csv" | summary)
    else
      note="$note flink: $(grep '^{' "$OUT/flink/$q.log" | tail -1 | json error 2>/dev/null | cut -c1-100 || echo "no result, see $OUT/flink/$q.log")"
    fi
    agree=no; [ "$ar" = "$fr" ] && [ "$ar" != "- -" ] && agree=yes
    printf '%-5s %11s %17s %11s %17s  %s\n' "$q" ${ar% *} "${ar#* }" ${fr% *} "${fr#* }" "$agree$note"
  done
  sitting end
  exit 0
fi

printf '%-5s %10s %10s %12s  %s\n' query anduin_s flink_s flink/anduin note
for q in ${QUERIES//,/ }; do
  a=$(nice -n 10 "$ANDUIN" bench nexmark --dir "$QDIR" --query "$q" --events "$EVENTS" \
      --parallelism "$AP" --var DATA="$DATA" 2>/dev/null | tail -1 | sed -n "s/^$q: .* events in \([0-9.]*\) s,.*/\1/p")
  f=$(nice -n 10 "$PY" "$REPO/bench/peers/flink_nexmark_all.py" "$DATA" "$q" --parallelism "$FP" --queries-dir "$QDIR" 2>/dev/null | json job_s || true)
  note=""; case $f in failed:*) note=${f#failed: }; f=failed ;; esac
  r=$("$PY" -c "a,f='${a:-x}','${f:-x}'
try: print('%.1f' % (float(f) / float(a)))
except ValueError: print('-')")
  printf '%-5s %10s %10s %12s  %s\n' "$q" "${a:-failed}" "${f:-failed}" "$r" "$note"
done
sitting end
