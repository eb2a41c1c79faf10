#!/bin/sh
# Stages, from Debian's packages, into .deps/ next to what ../shared/gpu-host/stage-deps.sh
# staged, for a GPU host whose image lacks them:
# - bubblewrap, for a host without bwrap: dit-ar then runs the candidate's stages in its sandbox
#   there (ARCHITECTURE.md, "Judging a commit"). On the host, after `. .deps/env.sh`:
#     export PATH="$PWD/.deps/root/usr/bin:$PATH"
#   (tools/gpu-host/lease.sh does it).
# - libssl-dev and libssl3 (OpenSSL 3's headers and libcrypto), for a host without OpenSSL's
#   headers: core's SHA-256 (core/sha256.cpp) is libcrypto's, so nothing builds without them.
#   `. .deps/env.sh` already points CMake (CMAKE_PREFIX_PATH) and the loader at .deps/root/usr.
# Then it drops .deps/'s static archives and documentation (17 MB on 2026-12-05), which nothing
# on the host uses.
# Run from the checkout root, after stage-deps.sh.
set -eu
root=$(git rev-parse --show-toplevel)
dest="$root/.deps"
[ -d "$dest/root" ] || { echo "stage-sandbox: run ../shared/gpu-host/stage-deps.sh first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
pkgs="bubblewrap libssl-dev libssl3"
# shellcheck disable=SC2086
apt-get download $pkgs >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download $pkgs; }
for d in *.deb; do dpkg -x "$d" "$dest/root"; done
# The build links the shared libraries: static archives and documentation would only take room
# in the device tool's 64 MiB (libcrypto.a alone is 9 MB), here and in what stage-deps.sh staged.
# pugixml's CMake package names its archive as an imported target, and checks that it exists.
find "$dest/root/usr/lib" -name '*.a' ! -name 'libpugixml.a' -delete
rm -rf "$dest/root/usr/share/doc" "$dest/root/usr/share/man"
"$dest/root/usr/bin/bwrap" --version
ls "$dest/root/usr/include/openssl/evp.h" "$dest/root/usr/lib/x86_64-linux-gnu/libcrypto.so"
