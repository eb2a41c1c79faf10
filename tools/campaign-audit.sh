#!/bin/sh
# The speed campaign's audit: every commit after the campaign's base that changes `model/` or
# `kernels/` must be an experiment the loop kept on an fp16 lane, with the driver's KEEP note on
# refs/notes/autoresearch naming it on top of its parent and the `A5500-effect:` trailer in its
# message, or say why not with `Loop-exempt: <why>` (`dit-ar audit`, driver/audit.h).
#
#   tools/campaign-audit.sh [--base REV] [--dit-ar PATH] [--repo DIR] [--notes-in-tree] [TIP]
#
# --base   the commit the campaign starts after (default: 119db6a, the last engine change made
#          outside the loop before it); TIP defaults to HEAD
# --dit-ar the driver (default: build/ci/driver/dit-ar, else the first build/*/driver/dit-ar)
# --repo   the checkout to audit (default: this one); its config/autoresearch.json names the
#          mutable paths, or this checkout's when it has none
# --notes-in-tree  for a checkout whose refs/notes/autoresearch did not come with it (a branch
#          travels without its notes): audit a scratch copy of its history instead, whose notes are
#          the copies committed at TIP as `knowledge/sessions/**/keep-note-<commit>.json` (each
#          what `git notes --ref=autoresearch show <commit>` printed). The checkout is not
#          changed; the driver still checks that each record names its commit and parent.
# Exit 0 when every commit passes, 5 when one fails, 2 for bad input: no notes ref (a clone
# fetches it with `git fetch <remote> 'refs/notes/*:refs/notes/*'`), an unknown revision, no
# driver.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
base=119db6aebea352b260480a73d10e529f30b264af
dit_ar=""
repo=$here
tip=HEAD
notes_in_tree=0
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --dit-ar) dit_ar=$2; shift 2 ;;
    --repo) repo=$2; shift 2 ;;
    --notes-in-tree) notes_in_tree=1; shift ;;
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
config=$repo/config/autoresearch.json
[ -f "$config" ] || config=$here/config/autoresearch.json
audited=$repo
if [ "$notes_in_tree" -eq 1 ]; then
  tip=$(git -C "$repo" rev-parse -q --verify "$tip^{commit}") ||
    { echo "campaign-audit: the tip names no commit in $repo" >&2; exit 2; }
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  audited=$scratch/repo
  # A checkout the driver can open (it refuses bare repositories), with no files written out
  # and none of the source's notes: the tree's copies only.
  { git init -q "$audited" && git -C "$audited" fetch -q --update-head-ok "$repo" "+refs/heads/*:refs/heads/*" "$tip"; } ||
    { echo "campaign-audit: cannot copy $repo's history into a scratch repository" >&2; exit 2; }
  git -C "$repo" ls-tree -r --name-only "$tip" -- knowledge/sessions >"$scratch/files"
  count=0
  while IFS= read -r file; do
    name=${file##*/}
    case "$name" in keep-note-*.json) ;; *) continue ;; esac
    short=${name#keep-note-}
    short=${short%.json}
    commit=$(git -C "$audited" rev-parse -q --verify "$short^{commit}" 2>/dev/null) ||
      { echo "campaign-audit: $file names no single commit ($short)" >&2; exit 2; }
    git -C "$repo" show "$tip:$file" >"$scratch/note"
    git -C "$audited" -c user.name=campaign-audit -c user.email=campaign-audit@localhost \
      notes --ref=autoresearch add -f -F "$scratch/note" "$commit" >/dev/null 2>&1 ||
      { echo "campaign-audit: cannot attach $file to $commit in the scratch repository" >&2; exit 2; }
    count=$((count + 1))
  done <"$scratch/files"
  [ "$count" -gt 0 ] ||
    { echo "campaign-audit: no keep-note-<commit>.json under knowledge/sessions/ at $tip" >&2; exit 2; }
  echo "campaign-audit: $count KEEP record(s) from the tree at $tip, in a scratch copy of $repo"
fi
git -C "$audited" rev-parse -q --verify refs/notes/autoresearch >/dev/null ||
  { echo "campaign-audit: $repo has no refs/notes/autoresearch, where the loop's KEEP notes live;" \
         "fetch them: git fetch <remote> 'refs/notes/*:refs/notes/*', or audit the copies" \
         "committed in the tree with --notes-in-tree" >&2; exit 2; }
lanes=""
for lane in a5500-fp16-256 a5500-fp16-session-256 a5500-fp16-batch-256 a5500-fp16-512; do lanes="$lanes --lane $lane"; done
status=0
# shellcheck disable=SC2086  # one word per option
"$dit_ar" audit "$base" "$tip" --repo "$audited" --config "$config" --require-trailer A5500-effect $lanes || status=$?
exit "$status"
