#!/usr/bin/env python3
"""What bounds a few kernel launches, from an Nsight Compute details CSV.

The CSV is what `ncu --csv --page details --print-units base --section SpeedOfLight --section
MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --log-file FILE ...` writes:
one row per (launch, metric), Nsight Compute's own notes (`==PROF==`, `==WARNING==`) mixed in.
Each launch gets one line: its kernel (the template arguments kept, since they tell the forms
apart), grid and block, duration, DRAM and L2 throughput as percentages of peak, the bytes a
second the memory system moved, L1 and L2 hit rates, registers a thread and theoretical and
achieved occupancy; with `--section SchedulerStats --section WarpStateStats`, a second line a
launch: warps active, eligible and issued a scheduler a cycle, the share of cycles with none
eligible, and a warp's cycles between issued instructions. Then the rules Nsight Compute raised,
once each, with the launches that raised them.

    ncu_sections.py FILE.csv [--json OUT.json]
"""
import argparse
import csv
import json
import sys

# (column, metric name in the details page)
COLUMNS = [
    ("duration_ns", "Duration"),
    ("dram_pct", "DRAM Throughput"),
    ("l2_pct", "L2 Cache Throughput"),
    ("l1_pct", "L1/TEX Cache Throughput"),
    ("sm_pct", "Compute (SM) Throughput"),
    ("memory_bytes_per_s", "Memory Throughput"),
    ("l1_hit_pct", "L1/TEX Hit Rate"),
    ("l2_hit_pct", "L2 Hit Rate"),
    ("registers", "Registers Per Thread"),
    ("theoretical_occupancy_pct", "Theoretical Occupancy"),
    ("achieved_occupancy_pct", "Achieved Occupancy"),
]
# SchedulerStats and WarpStateStats, when the log has them: how often a scheduler had a warp to
# issue, and how long a warp waited between its instructions.
SCHEDULER_COLUMNS = [
    ("active_warps_per_scheduler", "Active Warps Per Scheduler"),
    ("eligible_warps_per_scheduler", "Eligible Warps Per Scheduler"),
    ("issued_warp_per_scheduler", "Issued Warp Per Scheduler"),
    ("no_eligible_pct", "No Eligible"),
    ("warp_cycles_per_issued", "Warp Cycles Per Issued Instruction"),
]


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def read_launches(path):
    with open(path, newline="") as handle:
        lines = [line for line in handle if line.startswith('"')]
    if not lines:
        raise ValueError("no CSV rows (is it an ncu --csv --page details log?)")
    reader = csv.DictReader(lines)
    missing = {"ID", "Kernel Name", "Metric Name", "Metric Value"} - set(reader.fieldnames or [])
    if missing:
        raise ValueError("not a details page: no column %s" % ", ".join(sorted(missing)))
    launches, order = {}, []
    for row in reader:
        launch_id = row["ID"]
        if launch_id not in launches:
            order.append(launch_id)
            launches[launch_id] = {
                "id": int(launch_id),
                "kernel": row["Kernel Name"].split("(")[0].strip(),
                "grid": row.get("Grid Size", "").strip(),
                "block": row.get("Block Size", "").strip(),
                "metrics": {},
                "rules": [],
            }
        launch = launches[launch_id]
        if row["Metric Name"]:
            launch["metrics"][row["Metric Name"]] = row["Metric Value"]
        rule = row.get("Rule Name", "")
        if rule and rule not in [r["name"] for r in launch["rules"]]:
            launch["rules"].append({"name": rule, "description": row.get("Rule Description", "").strip(),
                                    "estimated_speedup_pct": number(row.get("Estimated Speedup", "") or "")})
    result = []
    for launch_id in order:
        launch = launches[launch_id]
        values = {column: number(launch["metrics"].get(metric, "")) for column, metric in COLUMNS + SCHEDULER_COLUMNS}
        result.append({"id": launch["id"], "kernel": launch["kernel"], "grid": launch["grid"],
                       "block": launch["block"], **values, "rules": launch["rules"]})
    return result


def text(value, scale=1.0, digits=1):
    return "-" if value is None else "%.*f" % (digits, value / scale)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--json")
    args = parser.parse_args()
    try:
        launches = read_launches(args.csv)
    except (OSError, ValueError) as error:
        print("%s: %s" % (args.csv, error), file=sys.stderr)
        return 2
    print("%s: %d launches" % (args.csv, len(launches)))
    print("%-3s %-60s %-14s %8s %6s %6s %6s %6s %7s %6s %6s %4s %6s %6s" % (
        "id", "kernel", "grid x block", "us", "DRAM%", "L2%", "L1%", "SM%", "TB/s", "L1hit", "L2hit", "reg",
        "occ.th", "occ"))
    for l in launches:
        print("%-3d %-60s %-14s %8s %6s %6s %6s %6s %7s %6s %6s %4s %6s %6s" % (
            l["id"], l["kernel"][-60:], "%sx%s" % (l["grid"], l["block"]), text(l["duration_ns"], 1e3, 2),
            text(l["dram_pct"]), text(l["l2_pct"]), text(l["l1_pct"]), text(l["sm_pct"]),
            text(l["memory_bytes_per_s"], 1e12, 2), text(l["l1_hit_pct"]), text(l["l2_hit_pct"]),
            text(l["registers"], digits=0), text(l["theoretical_occupancy_pct"]),
            text(l["achieved_occupancy_pct"])))
    if any(l[column] is not None for l in launches for column, _ in SCHEDULER_COLUMNS):
        print("%-3s %-60s %8s %8s %8s %8s %8s" % ("id", "kernel", "active", "eligible", "issued", "none%",
                                                 "cyc/inst"))
        for l in launches:
            print("%-3d %-60s %8s %8s %8s %8s %8s" % (
                l["id"], l["kernel"][-60:], text(l["active_warps_per_scheduler"], digits=2),
                text(l["eligible_warps_per_scheduler"], digits=2), text(l["issued_warp_per_scheduler"], digits=2),
                text(l["no_eligible_pct"]), text(l["warp_cycles_per_issued"], digits=2)))
    raised = {}
    for l in launches:
        for rule in l["rules"]:
            raised.setdefault(rule["name"], (rule, []))[1].append(l["id"])
    for name, (rule, ids) in raised.items():
        speedup = rule["estimated_speedup_pct"]
        print("rule %s (launches %s%s): %s" % (name, ",".join(map(str, ids)),
                                              "" if speedup is None else "; estimated speedup %.1f%%" % speedup,
                                              rule["description"]))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"source": args.csv, "launches": launches}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
