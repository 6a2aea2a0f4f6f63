#!/usr/bin/env python3
"""Rows and a checksum of a Nexmark query's result, comparable across engines (issue 23).

usage: python3 nexmark_normalize.py QUERY PATH
  PATH  anduin's output (`anduin run QDIR/qN.sql --var OUTPUT=PATH`, QDIR made by bench/nexmark-csv/make.py: a CSV with a
        header, a changelog with an `op` column first for an updating result, a directory of
        partitions for q10) or Flink's (flink_nexmark_all.py --output: always a changelog).
Prints one JSON line: {"query", "rows", "checksum"} of the result as it stands at the end (a
changelog folded: +I/+U add a row, -U/-D take one back), each row written canonically (numbers
with a fraction to 3 decimals, a whole number as an integer) and the rows sorted.

Where the engines' texts differ by type, the row is brought to Flink's: AVG of a BIGINT is a
BIGINT in Flink (truncated) and a DOUBLE in anduin (q4's `final`, q17's `avg_price`). q9's
top-1 per auction is folded by auction (see UPSERT_KEYS). q12's
windows are of processing time, which no two runs share: only each bidder's total is compared.
"""
import collections
import csv
import hashlib
import json
import pathlib
import sys

# Columns (by position, after `op`) of an AVG of a BIGINT: truncated to an integer, as Flink's.
AVG_OF_BIGINT = {"q4": [1], "q17": [8]}


# Results whose rows are unique by these columns (a top-1 per key): a change replaces the row of
# its key. Flink writes q9's top-1 as upserts (a new winner with no UPDATE_BEFORE of the old one:
# it wrote them so through the debezium-json file sink), anduin as -U/+U pairs; folded
# by key, both give the winners.
UPSERT_KEYS = {"q9": [0]}


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def changes(query, path):
    """(op, row) of every change in PATH, the header left out."""
    p = pathlib.Path(path)
    if p.is_dir():  # q10's partitions: dt=…/hm=…/part-*.csv, the partition values appended
        for f in sorted(p.rglob("*.csv")):
            parts = [d.split("=", 1)[1] for d in f.relative_to(p).parts[:-1]]
            lines = read_csv(f)
            for row in lines[1:]:
                yield "+I", row + parts
        return
    lines = read_csv(p)
    if not lines:
        return
    header, rows = lines[0], lines[1:]
    if header[0] == "op":
        for row in rows:
            yield row[0], row[1:]
    else:
        for row in rows:
            yield "+I", row


def canonical(v):
    try:
        int(v)
        return v
    except ValueError:
        pass
    try:
        x = "%.3f" % float(v)
    except ValueError:
        return v
    # A whole number is written as an integer, whichever engine wrote `16117.0` or `16117`.
    return x[:-4] if x.endswith(".000") and x not in ("nan", "inf", "-inf") else x


def fold(query, path):
    state = collections.Counter()
    by_key = {}
    keys = UPSERT_KEYS.get(query)
    for op, row in changes(query, path):
        row = [canonical(v) for v in row]
        for i in AVG_OF_BIGINT.get(query, []):
            if row[i] != "":
                row[i] = str(int(float(row[i])))
        if keys is not None:
            k = tuple(row[i] for i in keys)
            if op in ("+I", "+U"):
                by_key[k] = tuple(row)
            elif by_key.get(k) == tuple(row):
                del by_key[k]
            continue
        key = tuple(row)
        if op in ("+I", "+U"):
            state[key] += 1
        elif op in ("-U", "-D"):
            state[key] -= 1
            if state[key] == 0:
                del state[key]
        else:
            raise SystemExit(f"{path}: unknown change `{op}`")
    if keys is not None:
        state = collections.Counter(by_key.values())
    if query == "q12":  # bidder, bid_count, starttime, endtime: each bidder's total
        totals = collections.Counter()
        for (bidder, count, *_), n in state.items():
            totals[(bidder,)] += int(count) * n
        state = collections.Counter({(b, str(c)): 1 for (b,), c in totals.items()})
    negative = [k for k, n in state.items() if n < 0]
    if negative:
        raise SystemExit(f"{path}: {len(negative)} rows taken back more often than added, e.g. {negative[0]}")
    return sorted(",".join(k) for k, n in state.items() for _ in range(n))


def main():
    query, path = sys.argv[1], sys.argv[2]
    rows = fold(query, path)
    digest = hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]
    print(json.dumps({"query": query, "rows": len(rows), "checksum": digest}))


if __name__ == "__main__":
    main()
