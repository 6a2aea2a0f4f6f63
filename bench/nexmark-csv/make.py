#!/usr/bin/env python3
"""Writes OUT/qN.sql from benches/nexmark/qN.sql (issue 23): the same query, its `nexmark`
tables read instead from the CSV files of `anduin bench nexmark --dump DATA` (DATA/person.csv,
DATA/auction.csv, DATA/bid.csv), and an updating result written as a changelog (so that
bench/peers/nexmark_normalize.py folds every engine's output the same way); and OUT/side_input.txt,
q13's side table. The queries are made afresh from benches/nexmark at each use, never kept:
scripts/bench_nexmark_flink.sh, bench/peers/flink_nexmark_all.py and a test call this.

usage: python3 bench/nexmark-csv/make.py OUT
"""
import pathlib
import re
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE.parent.parent / "benches" / "nexmark"

NEXMARK_TABLE = re.compile(
    r"CREATE TABLE (person|auction|bid) \((?P<cols>[^;]*?)\) WITH \((?P<opts>[^;]*?connector = 'nexmark'[^;]*?)\);",
    re.S,
)
UPSERT = re.compile(r"mode = 'upsert',\s*primary_key = '[^']*'")


def file_table(m: re.Match) -> str:
    kind = m.group(1)
    return (
        f"CREATE TABLE {kind} ({m.group('cols')}) WITH (\n"
        f"  connector = 'file',\n"
        f"  path = '${{DATA}}/{kind}.csv',\n"
        f"  format = 'csv',\n"
        f"  header = 'false',\n"
        f"  event_time = 'dateTime',\n"
        f"  watermark = '4 seconds'\n"
        f");"
    )


def header(name: str) -> str:
    return f"""-- -------------------------------------------------------------------------------------------------
-- Nexmark {name} over the events of `anduin bench nexmark --dump DATA` (issue 23: beside Flink on the
-- same events). Made by bench/nexmark-csv/make.py from benches/nexmark/{name}.sql (whose comments
-- say how the text departs from nexmark-flink's): its `nexmark` tables read DATA/person.csv,
-- DATA/auction.csv, DATA/bid.csv (event time `dateTime`, watermark 4 s behind, as nexmark-flink's
-- DDL); an updating result is written as a changelog. Made afresh at each use from the query.
--
-- Run:   anduin run OUT/{name}.sql --var DATA=/tmp/nexmark --var OUTPUT={name}.csv
-- Bench: anduin bench nexmark --dir OUT --query {name} --events N --var DATA=/tmp/nexmark
-- -------------------------------------------------------------------------------------------------
"""


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SOURCE / "side_input.txt", out / "side_input.txt")
    for src in sorted(SOURCE.glob("q*.sql")):
        text = src.read_text()
        body = text[text.index("\nCREATE ") + 1:]
        body, n = NEXMARK_TABLE.subn(file_table, body)
        assert n >= 1, f"{src}: no nexmark table"
        assert "'nexmark'" not in body, f"{src}: a nexmark table left"
        body = UPSERT.sub("mode = 'changelog'", body)
        (out / src.name).write_text(header(src.stem) + "\n" + body)


if __name__ == "__main__":
    main()
