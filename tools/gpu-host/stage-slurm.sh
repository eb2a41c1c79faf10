#!/bin/sh
# Stages Debian 12's Slurm and munge packages into .deps/slurm/, as .deb files (compressed: 3.9 MB
# on 2026-12-06, where the files they hold take 15 MB), for a GPU host without a package registry
# whose image lacks Slurm: test driver_slurm_work (tests/driver/slurm_work.sh) skips without
# munged, slurmctld, slurmd and Slurm's client commands. On the host, as root, from the checkout
# root, tools/gpu-host/install-slurm.sh installs them into / (tools/gpu-host/lease.sh does it
# before its test stage).
# The packages: slurmctld, slurmd, slurm-client, slurm-wlm-basic-plugins, munge and libmunge2,
# and the shared libraries their programs and plugins load that a bare Ubuntu 24.04 image lacks
# (hwloc, json-c, Lua 5.1, libyaml, libnuma, readline, libdbus). Those a bare image has (libc,
# zlib, bzip2, lz4, libgcrypt, PAM, libtinfo, libudev, libsystemd, libstdc++) are left out; the
# script lists what the programs and plugins take from the host, when objdump is here.
# Prints the debs' size and what the device tool would carry, and fails above 63 MiB.
# Run from the checkout root, after stage-deps.sh.
set -eu
# shellcheck source=tools/gpu-host/stage-common.sh
. "$(dirname "$0")/stage-common.sh"
stage_begin stage-slurm
dest="$root/.deps/slurm"
pkgs="slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge libmunge2
      libhwloc15 libjson-c5 liblua5.1-0 libyaml-0-2 libnuma1 libreadline8 libdbus-1-3"
mkdir -p "$work/debs"
cd "$work/debs"
# shellcheck disable=SC2086
apt-get download $pkgs >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download $pkgs; }
# What the programs and plugins load that no staged package holds: the host's own libraries.
if command -v objdump >/dev/null 2>&1; then
  for d in *.deb; do dpkg -x "$d" "$work/x"; done
  find "$work/x" -type f \( -perm -u+x -o -name '*.so*' \) -exec objdump -p {} + 2>/dev/null \
    | awk '$1 == "NEEDED" { print $2 }' | sort -u >"$work/needed"
  find "$work/x" \( -type f -o -type l \) -name 'lib*.so*' -exec basename {} \; | sort -u >"$work/staged"
  from_host=$(comm -23 "$work/needed" "$work/staged" | tr '\n' ' ')
  echo "from the host: $from_host"
  # A bare Ubuntu 24.04 has these; another one is missing there.
  for lib in $from_host; do
    case "$lib" in
      libc.so.6 | libm.so.6 | libresolv.so.2 | libz.so.1 | libbz2.so.1.0 | liblz4.so.1 | libgcrypt.so.20 | \
        libpam.so.0 | libpam_misc.so.0 | libtinfo.so.6 | libudev.so.1 | libsystemd.so.0 | libstdc++.so.6 | \
        libgcc_s.so.1 | libpthread.so.0 | libdl.so.2 | librt.so.1 | ld-linux-x86-64.so.2) ;;
      *) echo "stage-slurm: warning: $lib is neither staged nor in a bare Ubuntu 24.04 image: add its package" >&2 ;;
    esac
  done
fi
rm -rf "$dest"
mkdir -p "$dest"
mv ./*.deb "$dest/"
grep -qx '/.deps/' "$root/.git/info/exclude" 2>/dev/null || echo '/.deps/' >> "$root/.git/info/exclude"
ls "$dest"
du -sh "$dest" "$root/.deps" "$root/.bundle" 2>/dev/null || true
stage_check_carry "$dest" 'rm -rf .deps/slurm undoes this'
