#!/usr/bin/env python3
"""Compares two output-hashes.sh lists (before, after) and each list with itself.

Every row of one list must have its row in the other with the same hashes, where both report
one ("-" is a hash a build does not report); within each list, bench_e2e's hashes of a case must
equal the render's. Prints one line per row and a verdict; exits 0 when all match, 1 otherwise.
"""
import csv
import sys

COLUMNS = ("latent_sha256", "image_sha256", "output_sha256")


def load(path):
    with open(path, newline="") as f:
        return {(r["source"], r["set"], r["case"]): r for r in csv.DictReader(f, delimiter="\t")}


def same(a, b):
    """Whether two rows agree on every hash both report; the number of hashes compared."""
    compared = [c for c in COLUMNS if a[c] != "-" and b[c] != "-"]
    return all(a[c] == b[c] for c in compared), len(compared)


def main(before_path, after_path):
    before, after = load(before_path), load(after_path)
    problems = []
    for key in sorted(set(before) | set(after)):
        name = "/".join(key)
        if key not in before or key not in after:
            side = 'after' if key in after else 'before'
            if key[0] == "bench_e2e":
                # Builds before and after the timed-outputs protocol time different images.
                print(f"{name}: only in {side} (bench_e2e timed another image there)")
            else:
                problems.append(f"{name}: only in {side}")
            continue
        equal, count = same(before[key], after[key])
        print(f"{name}: {'identical' if equal else 'DIFFERENT'} ({count} hashes)")
        if not equal:
            problems.append(f"{name}: before and after differ")
    for label, rows in (("before", before), ("after", after)):
        for (source, gate_set, case), row in rows.items():
            if source != "bench_e2e":
                continue
            render = rows.get(("render", gate_set, case))
            if render is None:
                print(f"{label}: bench_e2e/{gate_set}/{case}: a timed request's image, no render of it")
                continue
            equal, count = same(row, render)
            print(f"{label}: bench_e2e/{gate_set}/{case} against its render: {'identical' if equal else 'DIFFERENT'}"
                  f" ({count} hashes)")
            if not equal:
                problems.append(f"{label}: bench_e2e/{gate_set}/{case} differs from the render")
    for problem in problems:
        print("PROBLEM:", problem)
    print(f"{len(before)} rows before, {len(after)} after: " + ("all identical" if not problems else
                                                                 f"{len(problems)} problems"))
    return 0 if not problems else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: compare-hashes.py BEFORE.tsv AFTER.tsv")
    sys.exit(main(sys.argv[1], sys.argv[2]))
