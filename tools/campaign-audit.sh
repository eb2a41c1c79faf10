#!/bin/sh
# The speed campaign's audit: every commit after the campaign's base that changes `model/` or
# `kernels/` must be an experiment the loop kept on an fp16 lane, with the driver's KEEP note on
# refs/notes/autoresearch naming it on top of its parent and the `A5500-effect:` trailer in its
# message, or say why not with `Loop-exempt: <why>` (`dit-ar audit`, driver/audit.h).
#
#   tools/campaign-audit.sh [--base REV] [--dit-ar PATH] [--repo DIR] [TIP]
#
# --base   the commit the campaign starts after (default: 119db6a, the last engine change made
#          outside the loop before it); TIP defaults to HEAD
# --dit-ar the driver (default: build/ci/driver/dit-ar, else the first build/*/driver/dit-ar)
# --repo   the checkout to audit (default: this one); its config/autoresearch.json names the
#          mutable paths, or this checkout's when it has none
# Exit 0 when every commit passes, 5 when one fails, 2 for bad input: no notes ref (a clone
# fetches it with `git fetch <remote> 'refs/notes/*:refs/notes/*'`), an unknown revision, no
# driver.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
base=119db6aebea352b260480a73d10e529f30b264af
dit_ar=""
repo=$here
tip=HEAD
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --dit-ar) dit_ar=$2; shift 2 ;;
    --repo) repo=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "campaign-audit: unknown option $1" >&2; exit 2 ;;
    *) tip=$1; shift ;;
  esac
done
if [ -z "$dit_ar" ]; then
  for candidate in "$here/build/ci/driver/dit-ar" "$here"/build/*/driver/dit-ar; do
    if [ -x "$candidate" ]; then dit_ar=$candidate; break; fi
  done
fi
[ -n "$dit_ar" ] && [ -x "$dit_ar" ] ||
  { echo "campaign-audit: no dit-ar (build one, e.g. cmake --workflow --preset ci, or pass --dit-ar)" >&2; exit 2; }
git -C "$repo" rev-parse -q --verify refs/notes/autoresearch >/dev/null ||
  { echo "campaign-audit: $repo has no refs/notes/autoresearch, where the loop's KEEP notes live;" \
         "fetch them: git fetch <remote> 'refs/notes/*:refs/notes/*'" >&2; exit 2; }
config=$repo/config/autoresearch.json
[ -f "$config" ] || config=$here/config/autoresearch.json
lanes=""
for lane in a5500-fp16-256 a5500-fp16-session-256 a5500-fp16-batch-256; do lanes="$lanes --lane $lane"; done
# shellcheck disable=SC2086  # one word per option
exec "$dit_ar" audit "$base" "$tip" --repo "$repo" --config "$config" --require-trailer A5500-effect $lanes
