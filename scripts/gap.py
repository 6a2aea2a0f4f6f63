"""The output gap of a benchmark run (scripts/bench_output_gap.sh, bench_rescale_gap.sh).

usage: gap.py OUTPUT AT_MS [TIMELINE]
OUTPUT is a CSV file or a directory of parts (a run with checkpoints or on a cluster) whose rows
carry `seen_ms` (PROCTIME stamped after the operator measured); AT_MS the instant of the kill or
rescale. Prints "GAP BASELINE ROWS AROUND": the longest pause between two consecutive rows, the
longest before AT_MS - 100, the rows, and the longest that begins from AT_MS - 100 to AT_MS + 2 s
(the pause of the kill or rescale itself, apart from a loaded machine's pauses elsewhere). When the rows also carry `last_in` (the latest PROCTIME at which a
row that went into them entered the query), a second line "latency p50=… p99=… max=… |
before p99=… max=… | after p99=… max=…": seen_ms - last_in over the whole run, over the rows
written before AT_MS, and over those written in the 2 s from AT_MS. With TIMELINE set, on
stderr: the rows per 250 ms from 1 s before AT_MS to 2 s after it, and (with `last_in`) the
largest latency of each of those quarter seconds (a Megaphone-style timeline).
"""
import csv
import os
import sys

out, at = sys.argv[1], int(sys.argv[2])
timeline = len(sys.argv) > 3 and sys.argv[3]
parts = ([os.path.join(out, p) for p in os.listdir(out) if not p.startswith('.')]
         if os.path.isdir(out) else [out])
rows = [r for p in parts for r in csv.DictReader(open(p))]
seen = sorted(int(r["seen_ms"]) for r in rows)
gaps = [(b - a, a) for a, b in zip(seen, seen[1:])]
before = [g for g, a in gaps if a < at - 100]
around = [g for g, a in gaps if at - 100 <= a < at + 2000]
print(max(g for g, _ in gaps), max(before) if before else -1, len(seen),
      max(around) if around else -1)


def pct(values, p):
    if not values:
        return -1
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


lat = ([(int(r["seen_ms"]), int(r["seen_ms"]) - int(r["last_in"])) for r in rows]
       if rows and "last_in" in rows[0] else [])
if lat:
    every = [l for _, l in lat]
    pre = [l for s, l in lat if s < at]
    post = [l for s, l in lat if at <= s < at + 2000]
    print("latency p50=%d p99=%d max=%d | before p99=%d max=%d | after p99=%d max=%d" % (
        pct(every, 50), pct(every, 99), max(every), pct(pre, 99), max(pre, default=-1),
        pct(post, 99), max(post, default=-1)))
if timeline:
    quarters = range(-4, 8)
    buckets = [sum(1 for s in seen if at + k * 250 <= s < at + (k + 1) * 250) for k in quarters]
    print("rows per 250 ms from -1 s:", " ".join(map(str, buckets)), file=sys.stderr)
    if lat:
        worst = [max((l for s, l in lat if at + k * 250 <= s < at + (k + 1) * 250), default=-1)
                 for k in quarters]
        print("max latency (ms) per 250 ms from -1 s:", " ".join(map(str, worst)), file=sys.stderr)
