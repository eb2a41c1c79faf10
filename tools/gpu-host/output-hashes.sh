#!/bin/bash
# The output hashes of one build: every case of every gate set as the quality render writes it
# (render.json: latent file, PNG, raw output bytes), and the first image bench_e2e times for each
# GPU gate set on request seed 0 (its latent file and PNG; builds from before the timed-outputs
# protocol: its label's hash=, image=, output=). Two builds of one engine that differ only in
# structure must give identical lists; compare them with compare-hashes.py.
#
#   tools/gpu-host/output-hashes.sh BUILD_DIR OUT.tsv [WORK_DIR]
#
# Rows: source (render or bench_e2e), set, case, latent_sha256, image_sha256, output_sha256 ("-"
# where the build does not report one). Renders with dit-quality-render where the build has it,
# else with `dit-quality render` (builds from before the renderer had a program of its own).
set -euo pipefail
build=$(cd "$1" && pwd)
out=$2
work=${3:-$(mktemp -d)}
mkdir -p "$work"
if [ -x "$build/quality/dit-quality-render" ]; then
  render=("$build/quality/dit-quality-render" render)
else
  render=("$build/quality/dit-quality" render)
fi
sets=$(python3 -c 'import json,sys; print(" ".join(s["name"] + ":" + s["backend"] for s in json.load(open(sys.argv[1]))["sets"]))' \
  "$build/quality/gate-sets.json")
printf 'source\tset\tcase\tlatent_sha256\timage_sha256\toutput_sha256\n' >"$out"
for entry in $sets; do
  set=${entry%%:*} backend=${entry##*:}
  "${render[@]}" --gate-sets "$build/quality/gate-sets.json" --set "$set" --run-dir "$work/run" \
    >"$work/render-$set.log" 2>&1 || { tail -20 "$work/render-$set.log"; exit 1; }
  python3 - "$work/run/$set/render/render.json" "$set" >>"$out" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
for case, record in sorted(manifest["cases"].items()):
    print("\t".join(["render", sys.argv[2], case] +
                    [record.get(k) or "-" for k in ("latent_sha256", "image_sha256", "output_sha256")]))
PY
  [ "$backend" = cuda ] || continue
  # The first timed image for request seed 0, written by the harness (--outputs-dir); builds
  # from before the timed-outputs protocol report their first image's hashes in the label.
  rm -rf "$work/e2e-$set"
  "$build/bench/bench_e2e" --gate-set="$set" '--benchmark_filter=^BM_E2E_Image/256/' --benchmark_min_time=0.01 \
    --request-seed=0 --outputs-dir="$work/e2e-$set" --benchmark_out="$work/bench_e2e-$set.json" \
    >"$work/bench_e2e-$set.log" 2>&1 \
    || "$build/bench/bench_e2e" --gate-set="$set" '--benchmark_filter=^BM_E2E_Image/256/' --benchmark_min_time=0.01 \
      --benchmark_out="$work/bench_e2e-$set.json" >"$work/bench_e2e-$set.log" 2>&1 \
    || { tail -20 "$work/bench_e2e-$set.log"; exit 1; }
  python3 - "$work/bench_e2e-$set.json" "$set" "$work/e2e-$set" >>"$out" <<'PY'
import hashlib, json, os, sys
folder = sys.argv[3]
latent = os.path.join(folder, "image-0.latent.safetensors")
if os.path.exists(latent):
    digest = lambda path: hashlib.sha256(open(path, "rb").read()).hexdigest()
    print("\t".join(["bench_e2e", sys.argv[2], "image-0 (request seed 0)", digest(latent),
                     digest(os.path.join(folder, "image-0.png")), "-"]))
    sys.exit(0)
for entry in json.load(open(sys.argv[1]))["benchmarks"]:
    tokens = dict(t.split("=", 1) for t in entry.get("label", "").split() if "=" in t)
    if "hash" in tokens:
        print("\t".join(["bench_e2e", sys.argv[2], tokens.get("case", "-"), tokens["hash"],
                         tokens.get("image", "-"), tokens.get("output", "-")]))
        sys.exit(0)
sys.exit(f"{sys.argv[1]}: no timed image written and no BM_E2E_Image/256 entry with a hash")
PY
done
echo "output-hashes: $(($(wc -l <"$out") - 1)) rows in $out"
