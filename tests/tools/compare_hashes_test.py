#!/usr/bin/env python3
"""tools/gpu-host/compare-hashes.py: identical lists pass; a changed hash, a missing row, or a
bench_e2e hash that differs from its own render's fails; a hash one build does not report ("-")
is left out of the comparison.

    compare_hashes_test.py SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else ".")
COMPARE = os.path.join(SOURCE, "tools", "gpu-host", "compare-hashes.py")
HEADER = "source\tset\tcase\tlatent_sha256\timage_sha256\toutput_sha256\n"
RENDERS = ["render\tgpu\tc1\taa\tbb\tcc\n", "render\tgpu\tc2\tdd\tee\tff\n"]


class CompareHashes(unittest.TestCase):
    def compare(self, before_rows, after_rows):
        with tempfile.TemporaryDirectory() as folder:
            paths = []
            for name, rows in (("before.tsv", before_rows), ("after.tsv", after_rows)):
                path = os.path.join(folder, name)
                with open(path, "w") as handle:
                    handle.write(HEADER + "".join(rows))
                paths.append(path)
            return subprocess.run([sys.executable, COMPARE] + paths, capture_output=True, text=True)

    def test_identical_lists_pass_and_unreported_hashes_are_left_out(self):
        before = RENDERS + ["bench_e2e\tgpu\tc1\taa\t-\t-\n"]
        after = RENDERS + ["bench_e2e\tgpu\tc1\taa\tbb\tcc\n"]
        result = self.compare(before, after)
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertIn("all identical", result.stdout)
        self.assertIn("bench_e2e/gpu/c1: identical (1 hashes)", result.stdout)

    def test_a_changed_image_hash_fails(self):
        result = self.compare(RENDERS, [RENDERS[0], "render\tgpu\tc2\tdd\tXX\tff\n"])
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("PROBLEM: render/gpu/c2: before and after differ", result.stdout)

    def test_a_missing_row_fails(self):
        result = self.compare(RENDERS, RENDERS[:1])
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("render/gpu/c2: only in before", result.stdout)

    def test_a_bench_hash_unlike_its_render_fails(self):
        rows = RENDERS + ["bench_e2e\tgpu\tc1\tzz\t-\t-\n"]
        result = self.compare(rows, rows)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("bench_e2e/gpu/c1 differs from the render", result.stdout)


if __name__ == "__main__":
    unittest.main()
