#!/usr/bin/env python3
"""Issue 32's speed targets against one run: met, not met, or not measured on their GPU.

    speed_targets.py SIDE_BY_SIDE.json [--e2e BENCH_E2E.json] [--targets config/speed-targets.json]

SIDE_BY_SIDE.json is the `torch_reference.json` that bench/side_by_side.sh writes (its
`engine_over_floor` ratios, engine / library floor in the same run, and the GPU's name);
BENCH_E2E.json is Google Benchmark's JSON of bench_e2e's one-image benchmark from the same
machine. Prints one line a target with the measured figure; the verdict is only given on the
GPU the targets are for (a figure from another GPU is printed, never counted as met).

Exit codes: 0 every target met on the targets' GPU; 1 any not met, not measured, or measured on
another GPU; 2 an unreadable or malformed input, or an e2e run from another GPU than the side by
side's.
"""
import argparse
import json
import os
import sys

DEFAULT_TARGETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config",
                               "speed-targets.json")


class InputError(Exception):
    pass


def load(path, what):
    try:
        with open(path) as handle:
            return json.load(handle)
    except OSError as error:
        raise InputError("%s %s: %s" % (what, path, error.strerror or error))
    except json.JSONDecodeError as error:
        raise InputError("%s %s: not JSON (%s)" % (what, path, error))


def field(data, key, kind, where):
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InputError("%s: no %s %r" % (where, kind.__name__ if isinstance(kind, type) else "number", key))
    return value


def e2e_median(data, benchmark, where):
    context = field(data, "context", dict, where)
    gpu = field(context, "gpu_name", str, where + " context")
    for entry in field(data, "benchmarks", list, where):
        if isinstance(entry, dict) and entry.get("name") == benchmark:
            if entry.get("time_unit") != "ms":
                raise InputError("%s: %s is in %r, not ms" % (where, benchmark, entry.get("time_unit")))
            return gpu, field(entry, "real_time", (int, float), where + " " + benchmark)
    return gpu, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("side_by_side")
    parser.add_argument("--e2e")
    parser.add_argument("--targets", default=DEFAULT_TARGETS)
    args = parser.parse_args()
    try:
        targets = load(args.targets, "targets")
        target_gpu = field(targets, "gpu", str, args.targets)
        ratio_targets = field(targets, "engine_over_floor", dict, args.targets)
        image = field(targets, "image", dict, args.targets)
        image_benchmark = field(image, "benchmark", str, args.targets + " image")
        image_max = field(image, "max_ms", (int, float), args.targets + " image")
        sbs = load(args.side_by_side, "side by side")
        gpu = field(sbs, "gpu", str, args.side_by_side)
        ratios = field(sbs, "engine_over_floor", dict, args.side_by_side)
        image_ms = None
        if args.e2e:
            e2e_gpu, image_ms = e2e_median(load(args.e2e, "bench_e2e"), image_benchmark, args.e2e)
            if e2e_gpu != gpu:
                raise InputError("%s ran on %s, the side by side on %s: not one run" % (args.e2e, e2e_gpu, gpu))
    except InputError as error:
        print("speed_targets: %s" % error, file=sys.stderr)
        return 2

    on_target_gpu = target_gpu in gpu
    print("speed targets (%s) on %s%s" % (os.path.basename(args.targets), gpu,
                                          "" if on_target_gpu else ": not the %s, no verdict" % target_gpu))
    rows = [("engine / floor, " + name, ratios.get(name), limit, "%.3f", "x")
            for name, limit in ratio_targets.items()]
    rows.append(("one image, " + image_benchmark, image_ms, image_max, "%.1f", " ms"))
    all_met = on_target_gpu
    for label, value, limit, form, unit in rows:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            met = value <= limit
            verdict = ("met" if met else "not met") if on_target_gpu else "measured"
            shown = form % value + unit
        else:
            met, verdict, shown = False, "not measured", "-"
        all_met = all_met and met
        print("  %-58s %12s  target <= %s%s  %s" % (label, shown, form % limit, unit, verdict))
    print("all met" if all_met else "not all met" if on_target_gpu else "no verdict")
    return 0 if all_met else 1


if __name__ == "__main__":
    sys.exit(main())
