#!/usr/bin/env python3
"""The control plane's figures (docs/benchmarks.md, "Changing a running query").

1. Switch latency: a generator at RATE rows/s through a filter into a discard; the filter's
   condition is changed CHANGES times through the HTTP API (`PUT .../params/condition`, which
   answers once every instance has switched). Prints the median and p99 of the time from
   sending the request to the answer, with and without checkpoints.
2. The cost of serving the API: a bounded generator query (ROWS rows, as fast as possible),
   run REPEAT times alternately with `--no-api` and with the API served and `/metrics` scraped
   every 100 ms; prints the median wall time of each.

Usage: scripts/bench_control.py ANDUIN_BINARY [--rate 1000000] [--changes 100] [--rows 50000000]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

QUERY = """
type name = "R" {{
  column name = "ts", type = "timestamp"
  column name = "sensor", type = "int"
  column name = "value", type = "int"
}}
operator name = "gen", type = "generator" {{
  param profile = "events"
  {rate_or_count}
  output name = "raw", type = "R"
}}
operator name = "low", type = "filter" {{
  input name = "raw"
  param condition = "value % 2 = 0"
  output name = "low", type = "R"
}}
operator name = "drop", type = "discard" {{
  input name = "low"
}}
"""


def start(binary, flow, extra):
    p = subprocess.Popen(
        [binary, "run", flow, "-q"] + extra,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RUST_LOG": "warn"},
    )
    for line in p.stderr:
        if line.startswith("api: "):
            return p, line.strip()[len("api: "):]
    raise SystemExit("the run ended before serving its API")


def put(url, value):
    req = urllib.request.Request(
        url, data=json.dumps({"value": value, "from": "bench"}).encode(), method="PUT"
    )
    req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def latency(binary, rate, changes, checkpoints, work):
    flow = os.path.join(work, "latency.flow")
    with open(flow, "w") as f:
        f.write(QUERY.format(rate_or_count=f"param rate = {rate}"))
    extra = ["--name", "bench"]
    if checkpoints:
        extra += ["--checkpoint-dir", os.path.join(work, "ck"), "--from-scratch",
                  "--checkpoint-interval", "1h"]
    p, api = start(binary, flow, extra)
    url = f"{api}/api/v1/queries/bench/operators/low/params/condition"
    times = []
    try:
        time.sleep(1)  # let the run reach its rate before measuring
        for i in range(changes):
            value = "value % 2 = 1" if i % 2 == 0 else "value % 2 = 0"
            t = time.perf_counter()
            put(url, value)
            times.append((time.perf_counter() - t) * 1000)
        stop = urllib.request.Request(f"{api}/api/v1/queries/bench/stop", method="POST")
        urllib.request.urlopen(stop).read()
        p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    times.sort()
    p99 = times[min(len(times) - 1, int(round(0.99 * len(times))) - 1)]
    return statistics.median(times), p99


def one_run(binary, flow, api):
    extra = ["--name", "cost"] if api else ["--no-api"]
    t = time.perf_counter()
    if not api:
        subprocess.run([binary, "run", flow, "-q"] + extra, check=True,
                       stderr=subprocess.DEVNULL)
        return time.perf_counter() - t
    p, url = start(binary, flow, extra)
    done = threading.Event()

    def scrape():
        while not done.is_set():
            try:
                urllib.request.urlopen(f"{url}/metrics").read()
            except OSError:
                return
            time.sleep(0.1)

    s = threading.Thread(target=scrape)
    s.start()
    p.wait()
    done.set()
    s.join()
    return time.perf_counter() - t


def cost(binary, rows, repeat, work):
    flow = os.path.join(work, "cost.flow")
    with open(flow, "w") as f:
        f.write(QUERY.format(rate_or_count=f'param count = {rows}'))
    without, with_api = [], []
    for _ in range(repeat):
        without.append(one_run(binary, flow, False))
        with_api.append(one_run(binary, flow, True))
    return without, with_api


def main():
    a = argparse.ArgumentParser()
    a.add_argument("binary")
    a.add_argument("--rate", type=int, default=1_000_000)
    a.add_argument("--changes", type=int, default=100)
    a.add_argument("--rows", type=int, default=50_000_000)
    a.add_argument("--repeat", type=int, default=5)
    args = a.parse_args()
    with tempfile.TemporaryDirectory() as work:
        for checkpoints in (False, True):
            med, p99 = latency(args.binary, args.rate, args.changes, checkpoints, work)
            print(f"switch latency at {args.rate} rows/s, {args.changes} changes, "
                  f"{'with' if checkpoints else 'without'} checkpoints: "
                  f"median {med:.2f} ms, p99 {p99:.2f} ms")
        without, with_api = cost(args.binary, args.rows, args.repeat, work)
        show = lambda xs: " ".join(f"{x:.2f}" for x in xs)
        print(f"{args.rows} rows: --no-api median {statistics.median(without):.2f} s "
              f"({show(without)}), API served and /metrics scraped every 100 ms median "
              f"{statistics.median(with_api):.2f} s ({show(with_api)}), alternated")


if __name__ == "__main__":
    sys.exit(main())
