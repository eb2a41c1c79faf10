#!/bin/sh
# Installs the Slurm and munge packages that tools/gpu-host/stage-slurm.sh staged under
# .deps/slurm/ into / of a GPU host whose image lacks them, so that test driver_slurm_work
# (tests/driver/slurm_work.sh) runs there instead of skipping. As root, from the checkout root:
#
#   tools/gpu-host/install-slurm.sh [DEBS_DIR]   # default .deps/slurm
#
# (tools/gpu-host/lease.sh runs it before its test stage.) With munged, slurmctld, slurmd, sbatch,
# sinfo, squeue and scancel all on PATH or in /usr/sbin already, it does nothing. Otherwise it
# unpacks each .deb with dpkg -x (no maintainer scripts: no users, services or alternatives) and
# copies its files into / without replacing anything: a file or link that exists stays the
# host's, and so does a shared library whose soname the host's loader already finds (ldconfig -p),
# so that the next ldconfig cannot point that soname at the staged, older copy. Then the links
# Debian's alternatives make (/usr/sbin/slurmd to slurmd-wlm, slurmstepd, slurmctld), ldconfig,
# and the checks: slurmd -V, slurmctld -V, sbatch --version and munged --version run, and ldd
# finds every library of the daemons, the client commands and the plugins
# (/usr/lib/x86_64-linux-gnu/slurm-wlm), naming each one it does not. It warns when this host's
# name does not resolve (the test's slurm.conf names the node and the controller by it). What
# slurmd needs on cgroup v2 without systemd (IgnoreSystemd=yes, system.slice) the test sets up.
# Exit: 0 ready (or nothing to do); 2 without root, without staged .deb files, or when a check
# fails (the test then skips, as it did before).
# SLURM_INSTALL_ROOT=DIR, for testing only: installs into DIR instead of /, without root and
# without ldconfig; "already installed" then means in DIR, and the checks run DIR's programs with
# DIR's libraries first on LD_LIBRARY_PATH.
set -u
debs=${1:-.deps/slurm}
target=${SLURM_INSTALL_ROOT:-/}
t=${target%/}  # empty for /
libdir=usr/lib/x86_64-linux-gnu
tools="munged slurmctld slurmd sbatch sinfo squeue scancel"

# have TOOL: TOOL is installed, where the test looks for it (under SLURM_INSTALL_ROOT: in its
# usr/bin or usr/sbin).
have() {
  if [ -z "$t" ]; then
    command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]
  else
    [ -x "$t/usr/sbin/$1" ] || [ -x "$t/usr/bin/$1" ]
  fi
}
missing=""
for tool in $tools; do have "$tool" || missing="$missing $tool"; done
if [ -z "$missing" ]; then
  echo "install-slurm: $tools are installed in $target already: nothing to do"
  exit 0
fi
if [ -z "$t" ] && [ "$(id -u)" -ne 0 ]; then
  echo "install-slurm: needs root to install into / (missing:$missing)"
  exit 2
fi
set -- "$debs"/*.deb
if [ ! -f "$1" ]; then
  echo "install-slurm: no .deb files under $debs (missing:$missing): stage them with tools/gpu-host/stage-slurm.sh where Debian's packages are reachable, and carry .deps"
  exit 2
fi
command -v dpkg >/dev/null 2>&1 || { echo "install-slurm: dpkg is not on PATH, so the .deb files cannot be unpacked"; exit 2; }
[ -d "$target" ] || { echo "install-slurm: $target is not a folder"; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "install-slurm: missing:$missing; installing $# packages from $debs into $target"
mkdir -p "$work/pkg"
for d in "$@"; do
  dpkg -x "$d" "$work/pkg/$(basename "$d" .deb)" || { echo "install-slurm: dpkg -x $d failed"; exit 2; }
done

# The sonames the host's loader finds already (in /: its cache; under SLURM_INSTALL_ROOT: none),
# and the staged libraries they make redundant: each such soname's link and the file it names.
if [ -z "$t" ]; then
  ldconfig -p 2>/dev/null | awk '/x86-64/ { print $1 }' | sort -u >"$work/ldcache"
else
  : >"$work/ldcache"
fi
: >"$work/skip"
for p in "$work"/pkg/*; do
  for link in "$p/$libdir"/lib*.so.* "$p/lib/x86_64-linux-gnu"/lib*.so.*; do
    [ -L "$link" ] || continue
    so=$(basename "$link")
    dir=${link#"$p/"}
    dir=${dir%/*}
    if [ -e "$t/$libdir/$so" ] || [ -e "$t/lib/x86_64-linux-gnu/$so" ] || grep -qxF "$so" "$work/ldcache"; then
      printf '%s\n%s\n' "$dir/$so" "$dir/$(basename "$(readlink "$link")")" >>"$work/skip"
      echo "  $so: the host's own"
    fi
  done
done

# Every file and link that / lacks; folders made with the package's modes, parents first (find
# lists them so). A path under a link of the host's (/lib to usr/lib) follows that link.
added=0
kept=0
for p in "$work"/pkg/*; do
  (cd "$p" && find . -mindepth 1) | sed 's|^\./||' >"$work/list"
  while IFS= read -r f; do
    case "$f" in usr/share/doc | usr/share/doc/* | usr/share/man | usr/share/man/* | usr/share/lintian*) continue ;; esac
    src=$p/$f
    dest=$t/$f
    if [ -d "$src" ] && [ ! -L "$src" ]; then
      [ -d "$dest" ] || { mkdir "$dest" && chmod "$(stat -c %a "$src")" "$dest"; } ||
        { echo "install-slurm: cannot make the folder $dest"; exit 2; }
    elif [ -e "$dest" ] || [ -L "$dest" ] || grep -qxF "$f" "$work/skip"; then
      kept=$((kept + 1))
    else
      cp -P -p "$src" "$dest" || { echo "install-slurm: cannot copy $f to $dest"; exit 2; }
      added=$((added + 1))
    fi
  done <"$work/list"
done
# What Debian's alternatives would link (slurmd's postinst links slurmstepd with slurmd; slurmd
# starts /usr/sbin/slurmstepd).
for a in slurmd slurmstepd slurmctld; do
  if [ ! -e "$t/usr/sbin/$a" ] && [ ! -L "$t/usr/sbin/$a" ] && [ -x "$t/usr/sbin/$a-wlm" ]; then
    ln -s "$a-wlm" "$t/usr/sbin/$a" && added=$((added + 1))
  fi
done
echo "install-slurm: $added files and links added, $kept left as the host had them"
if [ -z "$t" ]; then
  ldconfig || echo "install-slurm: ldconfig failed"
else
  LD_LIBRARY_PATH=$t/$libdir:$t/lib/x86_64-linux-gnu:$t/$libdir/slurm-wlm${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
fi

# The checks. The client commands read a slurm.conf even for --version: a minimal one.
bad=0
printf 'ClusterName=check\nSlurmctldHost=localhost\n' >"$work/slurm.conf"
for check in "usr/sbin/slurmd -V" "usr/sbin/slurmctld -V" "usr/bin/sbatch --version" "usr/sbin/munged --version"; do
  # shellcheck disable=SC2086
  set -- $check
  if out=$(SLURM_CONF=$work/slurm.conf "$t/$1" "$2" 2>&1); then
    echo "  $(basename "$1") $2: $out"
  else
    echo "install-slurm: $(basename "$1") $2 failed: $out"
    bad=1
  fi
done
for f in "$t/usr/sbin/slurmd" "$t/usr/sbin/slurmctld" "$t/usr/sbin/slurmstepd" "$t/usr/sbin/munged" \
  "$t/usr/bin/sbatch" "$t/usr/bin/sinfo" "$t/usr/bin/squeue" "$t/usr/bin/scancel" "$t/$libdir/slurm-wlm"/*.so; do
  [ -e "$f" ] || { echo "install-slurm: $f is missing"; bad=1; continue; }
  lost=$(ldd "$f" 2>&1 | awk '/not found/ { printf " %s", $1 }')
  [ -z "$lost" ] || { echo "install-slurm: ldd $f: not found:$lost"; bad=1; }
done
missing=""
for tool in $tools; do have "$tool" || missing="$missing $tool"; done
[ -z "$missing" ] || { echo "install-slurm: still missing:$missing"; bad=1; }
if [ -z "$t" ] && ! getent hosts "$(hostname)" >/dev/null 2>&1; then
  echo "install-slurm: warning: this host's name '$(hostname)' does not resolve (getent hosts): the test's slurmctld and slurmd, which it names by it, will not find each other"
fi
if [ "$bad" -ne 0 ]; then
  echo "install-slurm: not ready (above); driver_slurm_work will skip or fail"
  exit 2
fi
echo "install-slurm: ready in $target"
