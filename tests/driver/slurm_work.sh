#!/bin/bash
# dit-ar work --slurm on a single-node Slurm cluster this test starts on localhost (munged,
# slurmctld and slurmd, each with its files under the test's folder and ports it picks): a queue
# of four candidates of the fixture lane (a CPU lane: no --gres) judged by two Slurm jobs at once
# must reach the decisions one local worker reaches from the same state, every attempt recording
# its Slurm job; dit-ar doctor --slurm says ready, and names the filesystem when sinfo lists
# another node. Every daemon is stopped at the end. Skips (77) without Slurm, munge or root,
# unless DIT_REQUIRE_SLURM=1 (CI), where that fails.
# Usage: slurm_work.sh DIT_AR DIT_PERF_GATE FIXTURE_DIR
set -u
DIT_AR=$1
PERF_GATE=$2
FIXTURE=$3
unset CCACHE_DISABLE CCACHE_READONLY CUDA_VISIBLE_DEVICES CTEST_RESOURCE_GROUP_COUNT
missing=""
for tool in munged slurmctld slurmd sbatch sinfo squeue scancel; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || missing="$missing $tool"
done
[ "$(id -u)" -eq 0 ] || missing="$missing (root)"
if [ -n "$missing" ]; then
  if [ "${DIT_REQUIRE_SLURM:-}" = 1 ]; then
    echo "FAIL: DIT_REQUIRE_SLURM=1 and this machine lacks:$missing (tools/install-deps.sh installs slurm-wlm, munge)"
    exit 1
  fi
  echo "skipped: needs$missing"
  exit 77
fi
PATH=$PATH:/usr/sbin
# shellcheck source=e2e_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/e2e_common.sh"
e2e_setup slurm
CLUSTER=$WORK/cluster
mkdir -p "$CLUSTER/state" "$CLUSTER/spool" "$CLUSTER/munge"
chmod 700 "$CLUSTER/munge"
DAEMONS=""
e2e_on_exit() {
  for pid in $DAEMONS; do kill "$pid" 2>/dev/null; done
  sleep 1
  for pid in $DAEMONS; do kill -9 "$pid" 2>/dev/null; done
}

step "a single-node cluster on localhost"
# free_port: a TCP port nothing listens on.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
HOST=$(hostname)
dd if=/dev/urandom of="$CLUSTER/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$CLUSTER/munge/munge.key"
MUNGE_SOCKET=$CLUSTER/munge/munge.socket
munged --force --key-file="$CLUSTER/munge/munge.key" --socket="$MUNGE_SOCKET" \
  --pid-file="$CLUSTER/munge/munged.pid" --log-file="$CLUSTER/munge/munged.log" \
  --seed-file="$CLUSTER/munge/munged.seed" || fail "munged did not start"
DAEMONS="$(cat "$CLUSTER/munge/munged.pid" 2>/dev/null)"
export SLURM_CONF=$CLUSTER/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=ditar
SlurmctldHost=$HOST
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$CLUSTER/state
SlurmdSpoolDir=$CLUSTER/spool
SlurmctldPidFile=$CLUSTER/slurmctld.pid
SlurmdPidFile=$CLUSTER/slurmd.pid
SlurmctldLogFile=$CLUSTER/slurmctld.log
SlurmdLogFile=$CLUSTER/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
MpiDefault=none
ReturnToService=2
KillWait=5
NodeName=$HOST CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
# Slurm 22.05's slurmd starts its cgroup plugin whatever slurm.conf says, and on cgroup v2 asks
# systemd for its step daemons' scope: where no systemd runs (a container's or a VM's PID 1 of its
# own), IgnoreSystemd=yes makes slurmd create that scope itself, under system.slice.
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] && [ ! -d /run/systemd/system ]; then
  printf 'IgnoreSystemd=yes\n' >"$CLUSTER/cgroup.conf"
  mkdir -p /sys/fs/cgroup/system.slice 2>/dev/null || true
fi
slurmctld -i || fail "slurmctld did not start"
slurmd || fail "slurmd did not start"
sleep 0.5
DAEMONS="$DAEMONS $(cat "$CLUSTER/slurmctld.pid" 2>/dev/null) $(cat "$CLUSTER/slurmd.pid" 2>/dev/null)"
deadline=$((SECONDS + 30))
until sinfo -h -N -o '%N %t' 2>/dev/null | grep -q "^$HOST idle"; do
  if [ $SECONDS -ge $deadline ]; then
    fail "the node is not idle 30 s after start: $(sinfo -h -N 2>&1); $(tail -n 5 "$CLUSTER/slurmctld.log")"
    e2e_finish
  fi
  sleep 0.2
done
sinfo -N

step "fixture repository, init, baseline, four candidates"
e2e_work_fixture
candidate fast 'set_plan 15'
candidate quality 'set_engine 4'
candidate scope 'echo note >"$REPO/notes.txt"'
candidate slower "sed -i 's|^  return image;|  std::this_thread::sleep_for(std::chrono::milliseconds(20));\n  return image;|' \"\$REPO/src/work.cpp\""
for name in fast quality scope slower; do
  ar "queue-$name" queue add --classification exact --description "$name" "cand/$name"
  expect_rc 0
done
cp -a "$STATE" "$WORK/state0"
git_ for-each-ref --format='%(objectname) %(refname)' refs/autoresearch refs/notes >"$WORK/refs0"

step "bad input"
ar slurm-gpus work --slurm --gpus 0
expect_rc 2
expect_text "--gpus names this host's GPUs"
ar slurm-args work --slurm-args "--partition=debug"
expect_rc 2
expect_text "--slurm-args without --slurm"
LAST=$LOGS/no-sbatch.out
(cd "$REPO" && PATH=/nonexistent "$DIT_AR" work --slurm) >"$LAST" 2>&1
RC=$?
expect_rc 2
expect_text "sbatch is not on PATH"

step "one local worker"
ar serial work --workers 1
expect_rc 0
expect_line "status: DRAINED"
decisions "$WORK/serial"
cat "$WORK/serial"
[ "$(cut -d' ' -f2 "$WORK/serial" | tr '\n' ' ')" = "KEEP DISCARD-QUALITY REJECTED DISCARD-PERFORMANCE " ] ||
  fail "the local decisions are not the expected ones"

step "the same queue from the same state, two Slurm jobs at once"
rm -rf "$STATE"
cp -a "$WORK/state0" "$STATE"
git_ for-each-ref --format='%(refname)' refs/autoresearch refs/notes | while read -r ref; do git_ update-ref -d "$ref"; done
while read -r sha ref; do git_ update-ref "$ref" "$sha"; done <"$WORK/refs0"
git_ reset -q --hard "$BASE"
start=$SECONDS
ar slurm work --slurm --workers 2 --slurm-args "--partition=debug"
expect_rc 0
echo "two Slurm workers: $((SECONDS - start)) s"
expect_line "status: DRAINED"
expect_text "as Slurm jobs"
decisions "$WORK/slurm"
cat "$WORK/slurm"
diff "$WORK/serial" "$WORK/slurm" || fail "the Slurm workers did not reach the local decisions"
python3 - "$STATE/queue.json" "$STATE" <<'PY' || fail "an attempt without its Slurm job"
import json, os, sys
jobs = []
for item in json.load(open(sys.argv[1]))["items"]:
    for a in item["attempts"]:
        assert a.get("slurm_job", "").isdigit(), (item["id"], a)
        folder = os.path.join(sys.argv[2], a["run_dir"])
        if not os.path.isdir(folder):
            folder += ".interrupted"  # a cancelled attempt's folder, sealed
        first = open(os.path.join(folder, "slurm-job.txt")).readline().strip()
        assert first.split(";")[0] == a["slurm_job"], (first, a)
        jobs.append(a["slurm_job"])
assert len(jobs) == len(set(jobs)) >= 4, jobs
PY
[ -z "$(squeue -h)" ] || fail "jobs left in the queue: $(squeue -h)"
[ "$(head_sha)" = "$(best_sha)" ] || fail "the branch did not follow the best"

step "a coordinator killed while its jobs run: the next one cancels them"
ar queue-again queue add --classification exact --description again "cand/slower"
expect_rc 0
(cd "$REPO" && exec "$DIT_AR" work --slurm --workers 1) >"$LOGS/killed.out" 2>&1 &
COORDINATOR=$!
deadline=$((SECONDS + 30))
until [ -n "$(squeue -h -o %i)" ] || [ $SECONDS -ge $deadline ]; do sleep 0.1; done
JOB=$(squeue -h -o %i | head -n 1)
[ -n "$JOB" ] || fail "no Slurm job was submitted"
kill -9 "$COORDINATOR"
wait "$COORDINATOR" 2>/dev/null
[ -n "$(squeue -h -j "$JOB" -o %T 2>/dev/null)" ] || echo "(job $JOB ended before the kill took)"
ar resume work --slurm --workers 1
expect_rc 0
expect_line "status: DRAINED"
[ -n "$JOB" ] && expect_text "cancelled Slurm job $JOB"
[ -z "$(squeue -h)" ] || fail "jobs left in the queue after the restart: $(squeue -h)"

step "dit-ar doctor --slurm"
ar doctor doctor --slurm
expect_rc 0
expect_line "slurm: ready"
expect_text_re "nodes: $HOST \(this host only\)"
# A second node, as a stand-in sinfo lists it: a local filesystem is then a finding.
mkdir -p "$WORK/fake-bin"
printf '#!/bin/sh\nprintf "%%s\\nother-node\\n" "%s"\n' "$HOST" >"$WORK/fake-bin/sinfo"
chmod +x "$WORK/fake-bin/sinfo"
FS_TYPE=$(stat -f -c %T "$REPO")
LAST=$LOGS/doctor-two-nodes.out
(cd "$REPO" && PATH=$WORK/fake-bin:$PATH "$DIT_AR" doctor --slurm) >"$LAST" 2>&1
RC=$?
expect_rc 0
case "$FS_TYPE" in
  nfs* | lustre | gpfs | ceph | fuse.beegfs | v9fs | virtiofs) expect_line "slurm: ready" ;;
  *)
    expect_line "slurm: not ready"
    expect_text "warning: $REPO is on "
    expect_text "not a filesystem the Slurm nodes share"
    ;;
esac
LAST=$LOGS/doctor-no-slurm.out
(cd "$REPO" && PATH=/usr/bin/nonexistent "$DIT_AR" doctor --slurm) >"$LAST" 2>&1
RC=$?
expect_rc 0
expect_line "slurm: not ready"
expect_text "warning: sbatch is not on PATH"

e2e_finish
