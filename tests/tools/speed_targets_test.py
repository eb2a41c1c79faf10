#!/usr/bin/env python3
"""bench/speed_targets.py on made-up side-by-side and bench_e2e JSON: every target met on an H200
exits 0; one missed, one not measured, or the same figures from an H100 (printed, no verdict)
exit 1; malformed input, or an e2e run from another GPU than the side by side's, exits 2.

    speed_targets_test.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else ".")
TOOL = os.path.join(SOURCE, "bench", "speed_targets.py")
TARGETS = os.path.join(SOURCE, "config", "speed-targets.json")
MET = {"forward/256/batch:2": 0.87, "forward/256/batch:64": 0.93, "forward/512/batch:2": 0.90}


def side_by_side(gpu="NVIDIA H200", ratios=None):
    return {"gpu": gpu, "engine_over_floor": dict(MET if ratios is None else ratios)}


def e2e(gpu="NVIDIA H200", median_ms=329.0):
    return {"context": {"gpu_name": gpu},
            "benchmarks": [{"name": "BM_E2E_Image/256/manual_time", "real_time": 400.0, "time_unit": "ms"},
                           {"name": "BM_E2E_Image/256/manual_time_median", "real_time": median_ms,
                            "time_unit": "ms"}]}


class SpeedTargets(unittest.TestCase):
    def run_tool(self, sbs, e2e_data=None, raw_sbs=None):
        with tempfile.TemporaryDirectory() as folder:
            sbs_path = os.path.join(folder, "torch_reference.json")
            with open(sbs_path, "w") as handle:
                handle.write(raw_sbs if raw_sbs is not None else json.dumps(sbs))
            command = [sys.executable, TOOL, sbs_path, "--targets", TARGETS]
            if e2e_data is not None:
                e2e_path = os.path.join(folder, "bench_e2e_fp16.json")
                with open(e2e_path, "w") as handle:
                    json.dump(e2e_data, handle)
                command += ["--e2e", e2e_path]
            return subprocess.run(command, capture_output=True, text=True)

    def test_every_target_met_on_the_h200(self):
        result = self.run_tool(side_by_side(), e2e())
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("0.930x  target <= 0.930x  met", result.stdout)  # the bound itself is met
        self.assertIn("329.0 ms  target <= 330.0 ms  met", result.stdout)
        self.assertIn("all met", result.stdout)

    def test_one_ratio_over_its_target(self):
        result = self.run_tool(side_by_side(ratios=dict(MET, **{"forward/512/batch:2": 0.99})), e2e())
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("0.990x  target <= 0.980x  not met", result.stdout)
        self.assertIn("not all met", result.stdout)

    def test_the_image_not_measured(self):
        result = self.run_tool(side_by_side())
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("not measured", result.stdout)
        missing = dict(MET)
        del missing["forward/256/batch:64"]
        result = self.run_tool(side_by_side(ratios=missing), e2e())
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("forward/256/batch:64", result.stdout)

    def test_figures_from_another_gpu_get_no_verdict(self):
        result = self.run_tool(side_by_side("NVIDIA H100 80GB HBM3"), e2e("NVIDIA H100 80GB HBM3"))
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("not the H200, no verdict", result.stdout)
        self.assertNotRegex(result.stdout, r"(?m)  (not )?met$")
        self.assertIn("329.0 ms  target <= 330.0 ms  measured", result.stdout)
        self.assertTrue(result.stdout.endswith("no verdict\n"), result.stdout)

    def test_malformed_or_mismatched_input_exits_2(self):
        for kwargs in ({"sbs": None, "raw_sbs": "{not json"},
                       {"sbs": {"gpu": "NVIDIA H200"}},
                       {"sbs": side_by_side(), "e2e_data": e2e(gpu="NVIDIA H100 80GB HBM3")},
                       {"sbs": side_by_side(), "e2e_data": {"benchmarks": []}}):
            result = self.run_tool(**kwargs)
            self.assertEqual(result.returncode, 2, (kwargs, result.stdout, result.stderr))
            self.assertTrue(result.stderr.startswith("speed_targets: "), result.stderr)
            self.assertEqual(result.stdout, "")


if __name__ == "__main__":
    unittest.main()
