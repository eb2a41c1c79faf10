#!/bin/sh
# Stages bubblewrap (Debian's package) into .deps/ next to what ../shared/gpu-host/stage-deps.sh
# staged, for a GPU host whose image has no bwrap: dit-ar then runs the candidate's stages in its
# sandbox there (ARCHITECTURE.md, "Judging a commit"). On the host, after `. .deps/env.sh`:
#   export PATH="$PWD/.deps/root/usr/bin:$PATH"
# (tools/gpu-host/lease.sh does it). Run from the checkout root, after stage-deps.sh.
set -eu
root=$(git rev-parse --show-toplevel)
dest="$root/.deps"
[ -d "$dest/root" ] || { echo "stage-sandbox: run ../shared/gpu-host/stage-deps.sh first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download bubblewrap >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download bubblewrap; }
for d in *.deb; do dpkg -x "$d" "$dest/root"; done
"$dest/root/usr/bin/bwrap" --version
