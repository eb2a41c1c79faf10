#!/usr/bin/env python3
"""bench/checkpoint_oracle.py on a small DiT and the CPU backend (no GPU, no diffusers needed):

- both layouts (the original .pt through tools/convert_checkpoint.py, diffusers' names) give the
  engine's forward pass and a 10-step DDIM image within 1e-5 of torch_reference in float64;
- a control: the diffusers layout written with one block's to_q and to_k swapped makes its checks
  fail (exit 1) while the original layout's still pass, so the comparison can fail;
- dit-sample's forward mode names inputs that do not fit the model (exit 2), and the oracle
  refuses a missing binary (exit 2).

Usage: checkpoint_oracle_test.py SOURCE_DIR DIT_SAMPLE
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import tempfile

SOURCE = pathlib.Path(sys.argv[1]).resolve()
DIT_SAMPLE = pathlib.Path(sys.argv[2]).resolve()
sys.path.insert(0, str(SOURCE / "bench"))

try:
    import torch  # noqa: F401
    from safetensors.torch import save_file
except ImportError as error:
    print(f"skipped: {error} (tools/install-deps.sh installs Debian's python3-torch and safetensors)")
    sys.exit(77)

import checkpoint_oracle as oracle  # noqa: E402

failures: list[str] = []


def check(condition: bool, what: str) -> None:
    print(f"  {'ok  ' if condition else 'FAIL'} {what}")
    if not condition:
        failures.append(what)


def arguments(work: pathlib.Path) -> list[str]:
    return ["--dit-sample", str(DIT_SAMPLE), "--model", "tiny", "--backend", "cpu", "--precisions", "fp32",
            "--diffusers", "off", "--steps", "10", "--work-dir", str(work), "--out", str(work / "oracle.json")]


with tempfile.TemporaryDirectory(prefix="checkpoint-oracle-") as scratch:
    root = pathlib.Path(scratch)

    print("both layouts agree with torch_reference")
    rc = oracle.main(arguments(root / "good"))
    report = json.loads((root / "good" / "oracle.json").read_text())
    checks = report["checks"]
    check(rc == 0, f"exit 0 (got {rc})")
    check(report["failed"] == 0, f"no check failed ({report['failed']})")
    for layout in ("original-converted", "diffusers"):
        for what in ("forward", "ddim10"):
            rows = [c for c in checks if c["layout"] == layout and c["what"] == what]
            check(len(rows) == 1 and rows[0]["passed"] and rows[0]["relative_error"] <= 1e-5,
                  f"{what} {layout}: {[r['relative_error'] for r in rows]} within 1e-5")

    print("control: to_q and to_k of block 1 swapped in the diffusers layout")
    unswapped = oracle.to_diffusers

    def swapped(weights, depth):
        out = unswapped(weights, depth)
        q, k = "transformer_blocks.1.attn1.to_q.weight", "transformer_blocks.1.attn1.to_k.weight"
        out[q], out[k] = out[k], out[q]
        return out

    oracle.to_diffusers = swapped
    try:
        rc = oracle.main(arguments(root / "swapped"))
    finally:
        oracle.to_diffusers = unswapped
    report = json.loads((root / "swapped" / "oracle.json").read_text())
    by_layout = {layout: [c["passed"] for c in report["checks"] if c["layout"] == layout]
                 for layout in ("original-converted", "diffusers")}
    check(rc == 1, f"exit 1 (got {rc})")
    check(by_layout["diffusers"] == [False, False], f"both diffusers checks fail ({by_layout['diffusers']})")
    check(by_layout["original-converted"] == [True, True],
          f"the original layout's still pass ({by_layout['original-converted']})")

    print("dit-sample's forward mode refuses inputs that do not fit")
    bad = root / "bad_inputs.safetensors"
    save_file({"x": torch.zeros(2, 4, 16, 16), "t": torch.tensor([1, 2]), "y": torch.tensor([0, 1])}, str(bad))
    done = subprocess.run([str(DIT_SAMPLE), f"--weights={root / 'good' / 'dit-converted.safetensors'}",
                           "--backend=cpu", f"--forward-inputs={bad}", f"--forward-output={root / 'bad_out.safetensors'}"],
                          capture_output=True, text=True)
    check(done.returncode == 2, f"exit 2 (got {done.returncode})")
    check("does not fit" in done.stderr and "[B, 4, 8, 8]" in done.stderr, f"names the shape: {done.stderr.strip()}")
    check(not (root / "bad_out.safetensors").exists(), "writes no output")
    done = subprocess.run([str(DIT_SAMPLE), "--random-weights", "--model=DiT-S/8", "--backend=cpu",
                           f"--forward-inputs={bad}"], capture_output=True, text=True)
    check(done.returncode == 2 and "--forward-output" in done.stderr, f"one of the pair alone: {done.stderr.strip()}")

    print("the oracle refuses a missing binary")
    done = subprocess.run([sys.executable, str(SOURCE / "bench" / "checkpoint_oracle.py"), "--dit-sample",
                           str(root / "nothing"), "--work-dir", str(root / "w"), "--out", str(root / "w.json")],
                          capture_output=True, text=True)
    check(done.returncode == 2 and "is not a file" in done.stderr, f"exit 2 naming it: {done.stderr.strip()[-120:]}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
