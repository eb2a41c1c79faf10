#!/usr/bin/env python3
"""tools/gpu-host/ncu_sections.py on made-up Nsight Compute details logs: one line per launch
with its metrics as numbers (thousands separators read, Nsight Compute's own notes skipped),
template arguments kept in the kernel's name, each rule once with the launches that raised it,
the scheduler and warp-state figures on a line of their own when the log has them;
an empty log or another page's CSV is refused with exit code 2.

    ncu_sections_test.py SOURCE_DIR
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else ".")
TOOL = os.path.join(SOURCE, "tools", "gpu-host", "ncu_sections.py")
FIELDS = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
          "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name",
          "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"]


def details_log(launches):
    """launches: [(kernel, {metric: value}, [(rule, description, speedup)])] -> the log's text."""
    out = io.StringIO()
    out.write("==PROF== Connected to process 1 (bench)\n==WARNING== Note: Running with uncontrolled GPU caches.\n")
    writer = csv.DictWriter(out, FIELDS, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writeheader()
    for index, (kernel, metrics, rules) in enumerate(launches):
        base = {"ID": str(index), "Kernel Name": kernel + "(float *, int)", "Block Size": "(96, 1, 1)",
                "Grid Size": "(16384, 1, 1)"}
        for name, value in metrics.items():
            writer.writerow({**base, "Metric Name": name, "Metric Value": value})
        for rule, description, speedup in rules:
            writer.writerow({**base, "Rule Name": rule, "Rule Description": description,
                             "Estimated Speedup": speedup})
    out.write("==PROF== Disconnected from process 1\n")
    return out.getvalue()


class NcuSections(unittest.TestCase):
    def run_tool(self, text):
        with tempfile.TemporaryDirectory() as folder:
            path, json_path = os.path.join(folder, "log.csv"), os.path.join(folder, "out.json")
            with open(path, "w") as handle:
                handle.write(text)
            result = subprocess.run([sys.executable, TOOL, path, "--json", json_path], capture_output=True,
                                    text=True)
            data = None
            if os.path.exists(json_path):
                with open(json_path) as handle:
                    data = json.load(handle)
            return result, data

    def test_each_launch_and_each_rule_once(self):
        slow = {"Duration": "68,096", "DRAM Throughput": "82.45", "Memory Throughput": "2,762,236,842,105.26",
                "L2 Hit Rate": "48.35", "Registers Per Thread": "56", "Theoretical Occupancy": "56.25",
                "Achieved Occupancy": "53.84"}
        fast = dict(slow, **{"Duration": "53,568", "DRAM Throughput": "67.11"})
        occupancy = ("TheoreticalOccupancy", "limited by the number of required registers", "43.75")
        result, data = self.run_tool(details_log([
            ("void kernel<__half, 1, 1>", slow, [occupancy, ("SOLBottleneck", "DRAM", "")]),
            ("void kernel<__half, 0, 0>", fast, [occupancy]),
        ]))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(": 2 launches", result.stdout)
        launches = data["launches"]
        self.assertEqual([l["kernel"] for l in launches], ["void kernel<__half, 1, 1>", "void kernel<__half, 0, 0>"])
        self.assertEqual(launches[0]["duration_ns"], 68096.0)
        self.assertAlmostEqual(launches[0]["memory_bytes_per_s"], 2.76223684210526e12, delta=1.0)
        self.assertEqual(launches[1]["dram_pct"], 67.11)
        self.assertIsNone(launches[1]["l1_hit_pct"])  # not in the log: no number made up
        self.assertIn("68.10", result.stdout)
        self.assertIn("2.76", result.stdout)
        self.assertEqual(result.stdout.count("rule TheoreticalOccupancy (launches 0,1; estimated speedup 43.8%)"), 1)
        self.assertEqual(result.stdout.count("rule SOLBottleneck (launches 0)"), 1)
        self.assertNotIn("cyc/inst", result.stdout)  # no scheduler sections in this log

    def test_scheduler_sections_get_their_own_line(self):
        metrics = {"Duration": "104,000", "Active Warps Per Scheduler": "2.95", "Eligible Warps Per Scheduler": "0.41",
                   "Issued Warp Per Scheduler": "0.33", "No Eligible": "67.20",
                   "Warp Cycles Per Issued Instruction": "8.94"}
        result, data = self.run_tool(details_log([("void attention_flash_kernel<72, __half, 2>", metrics, [])]))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("cyc/inst", result.stdout)
        line = [l for l in result.stdout.splitlines() if l.startswith("0 ") and "2.95" in l]
        self.assertEqual(len(line), 1, result.stdout)
        self.assertEqual(line[0].split()[-5:], ["2.95", "0.41", "0.33", "67.2", "8.94"])
        self.assertEqual(data["launches"][0]["no_eligible_pct"], 67.2)

    def test_an_empty_log_is_refused(self):
        result, data = self.run_tool("==PROF== Connected to process 1\n==ERROR== no kernels were profiled\n")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no CSV rows", result.stderr)
        self.assertIsNone(data)

    def test_another_page_is_refused(self):
        result, data = self.run_tool('"Kernel Name","gpu__time_duration.sum"\n"kernel","1,000"\n')
        self.assertEqual(result.returncode, 2)
        self.assertIn("not a details page", result.stderr)
        self.assertIsNone(data)


if __name__ == "__main__":
    unittest.main()
