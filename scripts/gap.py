"""The output gap of a benchmark run (scripts/bench_output_gap.sh, bench_rescale_gap.sh).

usage: gap.py OUTPUT AT_MS [TIMELINE]
OUTPUT is a CSV file or a directory of parts (a run with checkpoints or on a cluster) whose rows
carry `seen_ms` (PROCTIME stamped after the operator measured); AT_MS the instant of the kill or
rescale. Prints "GAP BASELINE ROWS": the longest pause between two consecutive rows, the longest
before AT_MS - 100, the rows; with TIMELINE set, the rows per 250 ms from 1 s before AT_MS to
2 s after it on stderr.
"""
import csv
import os
import sys

out, at = sys.argv[1], int(sys.argv[2])
timeline = len(sys.argv) > 3 and sys.argv[3]
parts = ([os.path.join(out, p) for p in os.listdir(out) if not p.startswith('.')]
         if os.path.isdir(out) else [out])
seen = sorted(int(r["seen_ms"]) for p in parts for r in csv.DictReader(open(p)))
gaps = [(b - a, a) for a, b in zip(seen, seen[1:])]
before = [g for g, a in gaps if a < at - 100]
print(max(g for g, _ in gaps), max(before) if before else -1, len(seen))
if timeline:
    buckets = [sum(1 for s in seen if at + k * 250 <= s < at + (k + 1) * 250) for k in range(-4, 8)]
    print("rows per 250 ms from -1 s:", " ".join(map(str, buckets)), file=sys.stderr)
