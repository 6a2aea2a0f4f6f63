"""Apache Flink (PyFlink 2.x) runs of the Nexmark queries over the events of
`anduin bench nexmark --dump DATA` (issue 23: both engines on the same events, same machine).

usage: python flink_nexmark_all.py DATA QUERIES [--parallelism P] [--output DIR] [--queries-dir DIR]
  DATA     the directory of person.csv, auction.csv, bid.csv (no header, timestamps in epoch ms)
  QUERIES  q0,q5,... or `all` (every query of benches/nexmark)
  --queries-dir  the queries over the files, as bench/nexmark-csv/make.py writes them (default:
           made afresh into a temporary directory)
  --output write each query's result to DIR/qN.csv (a changelog: `op` then the columns, as
           anduin's `mode = 'changelog'` writes it, an update as -D of the old row and +I of
           the new; timestamps as epoch ms) instead of into a blackhole sink, for
           bench/peers/nexmark_normalize.py to compare with anduin's (job_s then includes
           writing the files).

Each query's text is anduin's, the INSERT of qN.sql as bench/nexmark-csv/make.py writes it (nexmark-flink's text, with
the departures its comments give), run as nexmark-flink runs it: the three kinds of events as
views over tables with `dateTime` as event time and a watermark 4 s behind, the result into a
blackhole sink. FLINK_EDITS lists the few words Flink spells otherwise. Prints one JSON line per
query: {"system": "flink", "query": …, "job_s": …} (the time from submitting the job to its end,
as the peers kit measures it), or an "error" instead of "job_s" when Flink refuses or fails it.
"""
import argparse
import calendar
import datetime
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
MAKE = HERE.parent / "nexmark-csv" / "make.py"
# The directory of the queries over the files (main sets it).
QUERIES = pathlib.Path()

# The events: raw tables over the files (the timestamps are epoch ms: `dateTime` is computed as
# a TIMESTAMP(3) of UTC), and views with nexmark-flink's columns in its order (ddl_views.sql).
DDL = """
CREATE TABLE person_raw (
  id BIGINT, name STRING, emailAddress STRING, creditCard STRING, city STRING, state STRING,
  date_time_ms BIGINT, extra STRING,
  `dateTime` AS CAST(TO_TIMESTAMP_LTZ(date_time_ms, 3) AS TIMESTAMP(3)),
  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{data}/person.csv', 'format' = 'csv');
CREATE TABLE auction_raw (
  id BIGINT, itemName STRING, description STRING, initialBid BIGINT, reserve BIGINT,
  date_time_ms BIGINT, expires_ms BIGINT, seller BIGINT, category BIGINT, extra STRING,
  `dateTime` AS CAST(TO_TIMESTAMP_LTZ(date_time_ms, 3) AS TIMESTAMP(3)),
  expires AS CAST(TO_TIMESTAMP_LTZ(expires_ms, 3) AS TIMESTAMP(3)),
  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{data}/auction.csv', 'format' = 'csv');
CREATE TABLE bid_raw (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  date_time_ms BIGINT, extra STRING,
  `dateTime` AS CAST(TO_TIMESTAMP_LTZ(date_time_ms, 3) AS TIMESTAMP(3)),
  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{data}/bid.csv', 'format' = 'csv');
CREATE VIEW person AS SELECT id, name, emailAddress, creditCard, city, state, `dateTime`, extra FROM person_raw;
CREATE VIEW auction AS SELECT id, itemName, description, initialBid, reserve, `dateTime`, expires, seller, category, extra FROM auction_raw;
CREATE VIEW bid AS SELECT auction, bidder, price, channel, url, `dateTime`, extra FROM bid_raw;
"""

# q13's side table, nexmark-flink's side_input.txt (its legacy `connector.type` options are gone
# from Flink 2; the filesystem connector reads it).
SIDE_INPUT_DDL = """
CREATE TABLE side_input (key BIGINT, `value` STRING)
WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')
"""

QUOTE_DATETIME = re.compile(r"(?<![`\w])dateTime(?![`\w])")

# Words of anduin's texts that Flink spells otherwise: (query, anduin's, Flink's).
FLINK_EDITS = [
    ("q13", "S.value", "S.`value`"),
]


def query_text(name):
    """The views and the SELECT of QUERIES/NAME.sql, with FLINK_EDITS applied."""
    text = (QUERIES / f"{name}.sql").read_text()
    text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("--"))
    views = re.findall(r"(CREATE VIEW .*?);", text, re.S)
    m = re.search(r"INSERT INTO \w+\s+(.*?);\s*$", text, re.S)
    if not m:
        raise SystemExit(f"{name}: no INSERT in {QUERIES / (name + '.sql')}")
    select = m.group(1)
    # `dateTime` is a reserved word of Flink's SQL: nexmark-flink quotes it everywhere.
    views = [QUOTE_DATETIME.sub("`dateTime`", v) for v in views]
    select = QUOTE_DATETIME.sub("`dateTime`", select)
    for q, old, new in FLINK_EDITS:
        if q == name:
            views = [v.replace(old, new) for v in views]
            select = select.replace(old, new)
    return views, select, "count_char(" in select


def count_char_jar(java_home):
    """The jar of CountChar.java, compiled on first use against the installed PyFlink."""
    import pyflink
    lib = pathlib.Path(pyflink.__file__).parent / "lib"
    out = pathlib.Path(os.environ.get("VENV", pathlib.Path.home() / ".cache/anduin-peers")) / "countchar"
    jar = out / "countchar.jar"
    src = HERE / "CountChar.java"
    if not jar.exists() or jar.stat().st_mtime < src.stat().st_mtime:
        out.mkdir(parents=True, exist_ok=True)
        cp = ":".join(str(p) for p in lib.glob("*.jar"))
        subprocess.run([f"{java_home}/bin/javac", "--release", "17", "-cp", cp, "-d", str(out), str(src)], check=True)
        subprocess.run([f"{java_home}/bin/jar", "cf", str(jar), "-C", str(out), "CountChar.class"], check=True)
    return jar


def cell(v, timestamp=False):
    """A value as anduin's CSV writer writes it: timestamps as epoch ms, nulls empty."""
    if v is None:
        return ""
    if timestamp:
        t = datetime.datetime.fromisoformat(str(v).replace("Z", ""))
        return str(calendar.timegm(t.timetuple()) * 1000 + t.microsecond // 1000)
    if isinstance(v, bool):
        return "true" if v else "false"
    s = str(v)
    if any(c in s for c in ',"\n\r'):
        s = '"' + s.replace('"', '""') + '"'
    return s


def why(e):
    """The line of a Java error that says what went wrong (not Py4J's wrapper)."""
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    said = [l for l in lines if re.search(r"(Exception|Error): ", l) and "Py4J" not in l]
    return (said[0] if said else lines[0] if lines else repr(e))[:400]


def run(name, data, parallelism, output, java_home):
    from pyflink.table import EnvironmentSettings, TableDescriptor, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    cfg = env.get_config()
    cfg.set("parallelism.default", str(parallelism))
    cfg.set("table.local-time-zone", "UTC")
    cfg.set("table.exec.source.idle-timeout", "1 s")
    views, select, udf = query_text(name)
    if udf:
        cfg.set("pipeline.jars", f"file://{count_char_jar(java_home)}")
    for stmt in DDL.format(data=data).split(";"):
        if stmt.strip():
            env.execute_sql(stmt)
    if name == "q13":
        env.execute_sql(SIDE_INPUT_DDL.format(path=QUERIES / "side_input.txt"))
    if udf:
        env.execute_sql("CREATE TEMPORARY FUNCTION count_char AS 'CountChar'")
    for v in views:
        env.execute_sql(v)
    table = env.sql_query(select)
    start = time.time()
    if output is None:
        table.execute_insert(TableDescriptor.for_connector("blackhole").build()).wait()
        return {"job_s": round(time.time() - start, 3)}
    # Flink's filesystem sink takes an updating result in a changelog format (debezium-json:
    # an update is a delete of the old row and a create of the new); written in the JVM, then
    # turned into anduin's changelog CSV here (collecting through PyFlink takes ~1 ms a row).
    raw = pathlib.Path(output) / f"{name}.flink"
    if raw.exists():
        shutil.rmtree(raw)
    sink = (TableDescriptor.for_connector("filesystem").option("path", f"file://{raw}")
            .format("debezium-json").build())
    table.execute_insert(sink).wait()
    job_s = round(time.time() - start, 3)
    names = table.get_schema().get_field_names()
    times = [str(t).startswith("TIMESTAMP") for t in table.get_schema().get_field_data_types()]
    path = pathlib.Path(output) / f"{name}.csv"
    rows = 0
    with open(path, "w") as out:
        out.write(",".join(["op"] + names) + "\n")
        for part in sorted(p for p in raw.rglob("*") if p.is_file() and not p.name.endswith(".crc")):
            for line in part.read_text().splitlines():
                if not line.strip():
                    continue
                change = json.loads(line)
                for op, image in (("-D", "before"), ("+I", "after")):
                    row = change.get(image)
                    if row is not None:
                        out.write(",".join([op] + [cell(row[n], t) for n, t in zip(names, times)]) + "\n")
                        rows += 1
    return {"job_s": job_s, "changes": rows, "output": str(path)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data")
    p.add_argument("queries")
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--output")
    p.add_argument("--queries-dir")
    a = p.parse_args()
    global QUERIES
    if a.queries_dir:
        QUERIES = pathlib.Path(a.queries_dir)
    else:
        import tempfile
        QUERIES = pathlib.Path(tempfile.mkdtemp(prefix="nexmark-csv-"))
        subprocess.run([sys.executable, str(MAKE), str(QUERIES)], check=True)
    java_home = os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
    data = str(pathlib.Path(a.data).resolve())
    names = sorted((f.stem for f in QUERIES.glob("q*.sql")), key=lambda n: int(n[1:])) if a.queries == "all" else a.queries.split(",")
    if a.output:
        pathlib.Path(a.output).mkdir(parents=True, exist_ok=True)
    failed = False
    for name in names:
        result = {"system": "flink", "query": name, "parallelism": a.parallelism}
        try:
            result.update(run(name, data, a.parallelism, a.output, java_home))
        except Exception as e:  # Flink refuses or fails the query: say so and go on
            failed = True
            result["error"] = why(e)
        print(json.dumps(result), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
