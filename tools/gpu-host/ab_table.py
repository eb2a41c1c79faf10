#!/usr/bin/env python3
"""Medians of an A/B run of tools/gpu-host/ab.sh as one Markdown table.

Each input is a Google Benchmark JSON file (--benchmark_out) named <side>_<bench>_<round>.json,
side `a` (the tree as it is) or `b` (the tree with the patch). For every benchmark that reports
a `_median` aggregate, the table shows each round's median on both sides, then the ratio b / a of
the medians over the rounds (below 1 when the patch is faster).

    ab_table.py DIR [--out table.md]

Exit codes: 0 the table was written, 2 no usable file in DIR (or a file that is not benchmark
JSON), named on stderr.
"""
import argparse
import json
import os
import re
import statistics
import sys

NAME = re.compile(r"^(a|b)_([a-z0-9]+)_([0-9]+)\.json$")


def fail(message):
    print("ab_table.py: " + message, file=sys.stderr)
    sys.exit(2)


def medians(path):
    try:
        with open(path) as handle:
            document = json.load(handle)
        benchmarks = document["benchmarks"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        fail("%s is not Google Benchmark JSON (%s)" % (path, error))
    found = {}
    for entry in benchmarks:
        name = entry.get("name", "")
        if name.endswith("_median") and "real_time" in entry:
            found[name[: -len("_median")]] = (float(entry["real_time"]), entry.get("time_unit", ""))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--out")
    args = parser.parse_args()
    if not os.path.isdir(args.directory):
        fail("%s is not a directory" % args.directory)
    runs = {}  # (bench name) -> {"a": {round: value}, "b": {...}}, plus its unit
    units = {}
    rounds = set()
    for file_name in sorted(os.listdir(args.directory)):
        match = NAME.match(file_name)
        if not match:
            continue
        side, _, round_text = match.groups()
        rounds.add(int(round_text))
        for name, (value, unit) in medians(os.path.join(args.directory, file_name)).items():
            runs.setdefault(name, {"a": {}, "b": {}})[side][int(round_text)] = value
            units[name] = unit
    if not runs:
        fail("no <a|b>_<bench>_<round>.json file with a _median aggregate in %s" % args.directory)
    ordered = sorted(rounds)
    header = ["benchmark"] + ["a%d" % r for r in ordered] + ["b%d" % r for r in ordered] + ["b / a"]
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    for name in sorted(runs):
        sides = runs[name]
        cells = [name + (" (%s)" % units[name] if units[name] else "")]
        for side in ("a", "b"):
            cells += ["%.4g" % sides[side][r] if r in sides[side] else "" for r in ordered]
        if sides["a"] and sides["b"]:
            ratio = statistics.median(sides["b"].values()) / statistics.median(sides["a"].values())
            cells.append("%.4f" % ratio)
        else:
            cells.append("")
        lines.append("| " + " | ".join(cells) + " |")
    table = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(table)
    sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
