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
# on the host uses, and links OpenSSL's libraries to the host's own.
# Run from the checkout root, after stage-deps.sh.
set -eu
# shellcheck source=tools/gpu-host/stage-common.sh
. "$(dirname "$0")/stage-common.sh"
stage_begin stage-sandbox
dest="$root/.deps"
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
# The host's image has OpenSSL 3's libraries, not its headers: the build takes the headers from
# here and links the host's own libcrypto.so.3 and libssl.so.3 through these links (5.4 MB less
# to carry; built and run so on the H100 host, 2026-12-05).
for lib in libcrypto.so.3 libssl.so.3; do
  ln -sf "/usr/lib/x86_64-linux-gnu/$lib" "$dest/root/usr/lib/x86_64-linux-gnu/$lib"
done
"$dest/root/usr/bin/bwrap" --version
ls "$dest/root/usr/include/openssl/evp.h" && ls -l "$dest/root/usr/lib/x86_64-linux-gnu/libcrypto.so.3"
