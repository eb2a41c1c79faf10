#!/usr/bin/env python3
"""The parts of tools/gpu-host/ab.sh that need no GPU: the arguments it refuses (exit 2, the
tree untouched), what it would run with a patch or with two environments, and the table
ab_table.py makes of an A/B run's JSON.

    ab_test.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else ".")
AB = os.path.join(SOURCE, "tools", "gpu-host", "ab.sh")
TABLE = os.path.join(SOURCE, "tools", "gpu-host", "ab_table.py")


def run(command):
    return subprocess.run(command, capture_output=True, text=True, cwd=SOURCE)


def benchmark_json(path, medians, unit="ms"):
    entries = []
    for name, value in medians.items():
        entries.append({"name": name + "_mean", "real_time": value * 2, "time_unit": unit})
        entries.append({"name": name + "_median", "real_time": value, "time_unit": unit})
    with open(path, "w") as handle:
        json.dump({"context": {}, "benchmarks": entries}, handle)


class Refusals(unittest.TestCase):
    def refused(self, arguments, message):
        result = run(["bash", AB] + arguments)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn(message, result.stderr)

    def test_arguments(self):
        self.refused([], "no PATCH given (and no --env-a or --env-b)")
        self.refused(["/no/such.patch"], "is not a file")
        with tempfile.NamedTemporaryFile("w", suffix=".patch") as patch:
            patch.write("--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-no such line\n+x\n")
            patch.flush()
            self.refused([patch.name], "does not apply to this tree")
            self.refused([patch.name, "--rounds", "0"], "--rounds must be a positive integer")
            self.refused([patch.name, "--rounds", "two"], "--rounds must be a positive integer")
            self.refused([patch.name, "--benches", "forward,nope"], "unknown bench 'nope'")
            self.refused([patch.name, "--fast"], "unknown option --fast")
            self.refused([patch.name, patch.name], "one PATCH only")
        self.refused(["--env-b"], "--env-b needs a value")
        self.refused(["--env-a"], "--env-a needs a value")
        self.refused(["--env-b", "DIT_GEMM_PLAN"], "environment setting 'DIT_GEMM_PLAN' is not NAME=VALUE")
        self.refused(["--env-a", "A=1 2B=x"], "environment setting '2B=x' is not NAME=VALUE")
        self.refused(["--env-b", "A=1", "--benches", "nope"], "unknown bench 'nope'")

    def test_environments_alone_are_one_build(self):
        result = run(["bash", AB, "--env-a", "A=1 B=x", "--env-b", "DIT_GEMM_PLAN=off", "--benches", "e2e",
                      "--check"])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("one build, side a with 'A=1 B=x', side b with 'DIT_GEMM_PLAN=off'; 1 round(s) of e2e",
                      result.stdout)
        result = run(["bash", AB, "--env-b", "X=", "--check"])  # an empty value is a setting
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_a_patch_that_applies_is_checked_and_left_unapplied(self):
        readme = os.path.join(SOURCE, "README.md")
        with open(readme) as handle:
            before = handle.read()
        first = before.splitlines()[0]
        with tempfile.NamedTemporaryFile("w", suffix=".patch") as patch:
            patch.write("--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-%s\n+changed\n" % first)
            patch.flush()
            result = run(["bash", AB, patch.name, "--rounds", "2", "--benches", "forward,kernels", "--check"])
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("applies; 2 round(s) of forward,kernels", result.stdout)
        with open(readme) as handle:
            self.assertEqual(handle.read(), before)


class Table(unittest.TestCase):
    def test_medians_and_ratio(self):
        with tempfile.TemporaryDirectory() as folder:
            benchmark_json(os.path.join(folder, "a_forward_1.json"), {"BM_Forward/b2/manual_time": 1.70})
            benchmark_json(os.path.join(folder, "b_forward_1.json"), {"BM_Forward/b2/manual_time": 1.60})
            benchmark_json(os.path.join(folder, "a_forward_2.json"), {"BM_Forward/b2/manual_time": 1.72})
            benchmark_json(os.path.join(folder, "b_forward_2.json"), {"BM_Forward/b2/manual_time": 1.62})
            with open(os.path.join(folder, "notes.txt"), "w") as handle:
                handle.write("not a result")
            out = os.path.join(folder, "table.md")
            result = run([sys.executable, TABLE, folder, "--out", out])
            self.assertEqual(result.returncode, 0, result.stderr)
            lines = result.stdout.splitlines()
            self.assertEqual(lines[0], "| benchmark | a1 | a2 | b1 | b2 | b / a |")
            row = lines[2].split(" | ")
            self.assertEqual(row[0], "| BM_Forward/b2/manual_time (ms)")
            self.assertEqual(row[1:5], ["1.7", "1.72", "1.6", "1.62"])
            self.assertAlmostEqual(float(row[5].rstrip(" |")), 1.61 / 1.71, places=4)
            with open(out) as handle:
                self.assertEqual(handle.read(), result.stdout)

    def test_unusable_input_exits_2(self):
        with tempfile.TemporaryDirectory() as folder:
            result = run([sys.executable, TABLE, folder])
            self.assertEqual(result.returncode, 2)
            self.assertIn("no <a|b>_<bench>_<round>.json", result.stderr)
            with open(os.path.join(folder, "a_e2e_1.json"), "w") as handle:
                handle.write("{not json")
            result = run([sys.executable, TABLE, folder])
            self.assertEqual(result.returncode, 2)
            self.assertIn("a_e2e_1.json is not Google Benchmark JSON", result.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
