#!/usr/bin/env python3
"""Per-kernel GPU time of one unit of work (a forward pass, a decode) from an Nsight Compute CSV.

The CSV is what `ncu --csv --page raw --metrics gpu__time_duration.sum --print-kernel-base
function --log-file FILE ...` writes. A profiled program runs the unit several times (warm-up,
timed iterations); the launches of a marker kernel that runs once per unit (for a DiT forward
pass, patch_embed) count the units, and every kernel's total is divided by that count.

    ncu_breakdown.py FILE.csv --marker patch_embed [--top 25] [--json OUT.json]

Prints kernel, launches per unit, microseconds per unit and share, largest first.
"""
import argparse
import csv
import json
import sys
from collections import defaultdict


def read_rows(path):
    with open(path, newline="") as handle:
        lines = [line for line in handle if line.startswith('"')]
    reader = csv.DictReader(lines)
    rows = []
    for row in reader:
        value = row.get("gpu__time_duration.sum", "")
        try:
            duration = float(value.replace(",", ""))
        except ValueError:
            continue  # the units row
        rows.append((row.get("Kernel Name", "?"), duration))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--marker", required=True, help="a kernel that runs once per unit of work")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--unit-ns", type=float, default=1.0, help="nanoseconds per CSV time unit (ncu: ns)")
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = read_rows(args.csv)
    if not rows:
        sys.exit("%s: no kernel rows" % args.csv)
    units = sum(1 for name, _ in rows if args.marker in name)
    if units == 0:
        sys.exit("%s: marker kernel %r never ran" % (args.csv, args.marker))
    # Only whole units: drop what ran before the first marker (setup) and from the last marker on
    # when it is incomplete is not knowable, so count everything from the first marker.
    first = next(i for i, (name, _) in enumerate(rows) if args.marker in name)
    rows = rows[first:]
    total = defaultdict(float)
    count = defaultdict(int)
    for name, duration in rows:
        total[name] += duration * args.unit_ns / 1000.0
        count[name] += 1
    unit_us = sum(total.values()) / units
    print("%s: %d launches, %d units (marker %s), %.1f us of kernels per unit" % (
        args.csv, len(rows), units, args.marker, unit_us))
    print("%-60s %8s %10s %6s" % ("kernel", "per unit", "us/unit", "share"))
    ranked = sorted(total, key=lambda k: -total[k])
    for name in ranked[: args.top]:
        print("%-60s %8.1f %10.1f %5.1f%%" % (name[:60], count[name] / units, total[name] / units,
                                              100.0 * total[name] / units / unit_us))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"csv": args.csv, "marker": args.marker, "units": units, "unit_us": unit_us,
                       "kernels": [{"kernel": k, "launches_per_unit": count[k] / units,
                                    "us_per_unit": total[k] / units} for k in ranked]}, handle, indent=1)


if __name__ == "__main__":
    main()
