#!/bin/sh
# Issue 18's pathological patterns grow linearly with the input (docs/benchmarks.md,
# "Pathological patterns are linear"): `(A+)+ B`, `(A*)* B`, `(A | B)* C`, `(A+ | A+)+ B`,
# `((A | B){2})* C`, and `(A | B)* C` whose last condition also reads `COUNT(A.*)` (an
# aggregate over a variable, which tells partial matches apart by its count), and `A+ B` whose
# last condition reads `MAX(A.value)` (a running aggregate that grows
# with the partial match: a row's work per row, not a walk over the match) over one
# partition of the `events` rows (benches/cep_nested_loops.flow: every row an A, or an A and
# a B; the last variable where `value < 10`), each over 1 k, 10 k and 100 k rows (SIZES):
#   within-20ms  as the flow has it: about 20 attempts in flight, each pruned to a partial
#                match per point of the pattern;
#   whole-run    without `within`: the first attempt stands for the later ones, one attempt
#                in flight;
#   from-start   without `within`, and the last variable's condition also reading
#                `COUNT(*) > 0` (true in every match, but it counts from the match's first
#                row, so no attempt stands for another): an attempt per row in flight, as
#                before the first attempt stood for the later ones. Over SIZES_FROM_START
#                (quadratic in time and memory: 1 k, 5 k and 10 k rows by default; 10 k
#                take about 4 GB, 20 k 15 GB).
#
# usage: scripts/bench_cep_pathological.sh ANDUIN [SIZES [SIZES_FROM_START]]
#   ANDUIN: a release build (cargo build --profile release-lto -p anduin-cli).
#   ONLY="(A*)* B": that pattern only (with its CONDITION: ONLY="(A | B)* C AND COUNT(A.*) >= 0").
#   Prints one line per run: "PATTERN | bound | rows | wall s | user s | us per row | peak RSS MB"
#   (a run's start, about 10 ms, is in its times).
set -eu
A=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SIZES=${2:-"1000 10000 100000"}
SIZES_FROM_START=${3:-"1000 5000 10000"}
HERE=$(cd "$(dirname "$0")" && pwd)
FLOW="$HERE/../benches/cep_nested_loops.flow"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT TERM

# The same query without its `within`.
grep -v 'param within' "$FLOW" > "$W/whole_run.flow"

# PATTERN;LAST[;CONDITION]: the last variable's condition is `value < 10`, and CONDITION.
for case in "(A+)+ B;B" "(A*)* B;B" "(A | B)* C;C" "(A+ | A+)+ B;B" "((A | B){2})* C;C" \
    "(A | B)* C;C;COUNT(A.*) >= 0" \
    "A+ B;B;MAX(A.value) >= 0"; do
    pattern=${case%%;*}
    rest=${case#*;}
    last=${rest%%;*}
    extra=
    if [ "$rest" != "$last" ]; then extra=" AND ${rest#*;}"; fi
    if [ -n "${ONLY:-}" ] && [ "$ONLY" != "$pattern$extra" ]; then continue; fi
    for bound in within-20ms whole-run from-start; do
        flow=$W/whole_run.flow
        define="$last AS value < 10$extra"
        sizes=$SIZES
        case $bound in
        within-20ms) flow=$FLOW ;;
        from-start)
            define="$last AS value < 10$extra AND COUNT(*) > 0"
            sizes=$SIZES_FROM_START
            ;;
        esac
        for n in $sizes; do
            /usr/bin/time -f "%e %U %M" -o "$W/time" \
                "$A" run "$flow" -q --var "COUNT=$n" --var "PATTERN=$pattern" \
                --var "DEFINE=$define" > "$W/out" 2>&1 || {
                echo "$pattern$extra | $bound | $n | failed:" >&2
                cat "$W/out" >&2
                exit 1
            }
            read -r wall user rss < "$W/time"
            awk -v p="$pattern$extra" -v b="$bound" -v n="$n" -v w="$wall" -v u="$user" -v r="$rss" \
                'BEGIN { printf "%s | %s | %d | %.2f | %.2f | %.2f | %.0f\n", p, b, n, w, u, u * 1e6 / n, r / 1024 }'
        done
    done
done
