#!/bin/bash
# tools/gpu-host/install-slurm.sh into a scratch root (SLURM_INSTALL_ROOT) from made-up packages
# built here with dpkg-deb, shell scripts standing in for Slurm's and munge's programs: what the
# root lacks is added, with the links Debian's alternatives make; a file the root has, and a
# staged library whose soname it has, stay its own; a /lib that links to usr/lib is followed;
# a second run has nothing to do; no staged package, or a program that does not run, exits 2.
# Skips (77) without dpkg-deb. Usage: install_slurm_test.sh INSTALL_SLURM_SH
set -u
SCRIPT=$1
command -v dpkg-deb >/dev/null 2>&1 || { echo "skipped: needs dpkg-deb"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
FAILURES=0
fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }
# install_into ROOT DEBS EXPECTED: the script into ROOT from DEBS, its output in $WORK/out (and
# printed), its exit status checked against EXPECTED.
install_into() {
  SLURM_INSTALL_ROOT=$1 sh "$SCRIPT" "$2" >"$WORK/out" 2>&1
  local rc=$?
  cat "$WORK/out"
  [ "$rc" -eq "$3" ] || fail "expected exit $3, got $rc"
}
L=usr/lib/x86_64-linux-gnu

# package NAME PATH=CONTENT...: a .deb in $WORK/debs of those files (a CONTENT of @TARGET: a link).
package() {
  local name=$1 item path content dir=$WORK/src/$1
  shift
  mkdir -p "$dir/DEBIAN" "$WORK/debs"
  printf 'Package: %s\nVersion: 1.0\nArchitecture: all\nMaintainer: test <test@localhost>\nDescription: test\n' \
    "$name" >"$dir/DEBIAN/control"
  for item in "$@"; do
    path=${item%%=*} content=${item#*=}
    mkdir -p "$dir/$(dirname "$path")"
    if [ "${content#@}" != "$content" ]; then
      ln -s "${content#@}" "$dir/$path"
    else
      printf '%s\n' "$content" >"$dir/$path"
      case "$path" in */sbin/* | */bin/*) chmod 755 "$dir/$path" ;; esac
    fi
  done
  dpkg-deb --root-owner-group -b "$dir" "$WORK/debs/$name.deb" >/dev/null || fail "dpkg-deb of $name"
}
version() { printf '#!/bin/sh\necho "%s"' "$1"; }
package fake-slurm \
  "usr/sbin/slurmd-wlm=$(version 'slurm-wlm 22.05.8')" "usr/sbin/slurmstepd-wlm=$(version stepd)" \
  "usr/sbin/slurmctld-wlm=$(version 'slurm-wlm 22.05.8')" "usr/bin/sbatch=$(version 'slurm-wlm 22.05.8')" \
  "usr/bin/sinfo=$(version sinfo)" "usr/bin/squeue=$(version squeue)" "usr/bin/scancel=$(version scancel)" \
  "$L/slurm-wlm/auth_munge.so=plugin" "etc/default/slurmd=staged" "usr/share/doc/fake-slurm/copyright=doc"
package fake-munge "usr/sbin/munged=$(version 'munge-0.5.15')"
package fake-libs "lib/x86_64-linux-gnu/libfoo.so.1.2=foo" "lib/x86_64-linux-gnu/libfoo.so.1=@libfoo.so.1.2" \
  "$L/libbar.so.2.0=staged bar" "$L/libbar.so.2=@libbar.so.2.0"

# A root with merged /usr, a file of its own where a package has one, and its own libbar.so.2.
ROOT=$WORK/root
mkdir -p "$ROOT/$L" "$ROOT/etc/default"
ln -s usr/lib "$ROOT/lib"
echo host >"$ROOT/etc/default/slurmd"
echo "host bar" >"$ROOT/$L/libbar.so.2.9"
ln -s libbar.so.2.9 "$ROOT/$L/libbar.so.2"

echo "== install into a scratch root"
install_into "$ROOT" "$WORK/debs" 0
grep -q "ready in $ROOT" "$WORK/out" || fail "no 'ready'"
grep -q "libbar.so.2: the host's own" "$WORK/out" || fail "libbar.so.2 not named as the root's own"
[ "$(cat "$ROOT/etc/default/slurmd")" = host ] || fail "the root's etc/default/slurmd was replaced"
[ "$(readlink "$ROOT/$L/libbar.so.2")" = libbar.so.2.9 ] || fail "the root's libbar.so.2 was replaced"
[ ! -e "$ROOT/$L/libbar.so.2.0" ] || fail "the staged libbar was copied beside the root's"
[ -L "$ROOT/lib" ] || fail "the root's lib link was replaced"
[ "$(cat "$ROOT/$L/libfoo.so.1.2" 2>/dev/null)" = foo ] || fail "libfoo did not land through the lib link"
[ "$(readlink "$ROOT/$L/libfoo.so.1")" = libfoo.so.1.2 ] || fail "libfoo.so.1 is not the package's link"
for a in slurmd slurmstepd slurmctld; do
  [ "$(readlink "$ROOT/usr/sbin/$a")" = "$a-wlm" ] || fail "no link usr/sbin/$a -> $a-wlm"
done
[ -x "$ROOT/usr/sbin/munged" ] || fail "munged missing"
[ -x "$ROOT/usr/bin/scancel" ] || fail "scancel missing"
[ -f "$ROOT/$L/slurm-wlm/auth_munge.so" ] || fail "the plugin did not land"
[ ! -e "$ROOT/usr/share/doc/fake-slurm" ] || fail "documentation was copied"

echo "== again: nothing to do"
install_into "$ROOT" "$WORK/debs" 0
grep -q "nothing to do" "$WORK/out" || fail "a second run did not find everything installed"

echo "== no staged packages"
install_into "$WORK/empty-root" "$WORK/nothing" 2
grep -q "no .deb files under $WORK/nothing" "$WORK/out" || fail "no message naming the folder"

echo "== the root's own munged, which does not run"
ROOT2=$WORK/root2
mkdir -p "$ROOT2/usr/sbin"
printf '#!/bin/sh\nexit 1\n' >"$ROOT2/usr/sbin/munged"
chmod 755 "$ROOT2/usr/sbin/munged"
install_into "$ROOT2" "$WORK/debs" 2
grep -q "munged --version failed" "$WORK/out" || fail "the failing munged is not named"
[ "$(tail -n 1 "$ROOT2/usr/sbin/munged")" = "exit 1" ] || fail "the root's munged was replaced"

[ $FAILURES -eq 0 ] || { echo "$FAILURES failure(s)"; exit 1; }
echo "install-slurm: all checks passed"
