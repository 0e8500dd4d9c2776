#!/usr/bin/env bash
# `ternlab sweep` through a real Slurm: starts a single-node cluster on localhost (munged,
# slurmctld, slurmd; a minimal slurm.conf written here, no cgroups, all state in a temporary
# folder, ports of its own), submits a three-point sweep of a tiny gemv config with the sbatch
# script `ternlab sweep plan` wrote, waits for it (bounded), checks every point's exit status and
# Slurm ids, resubmits a point with `ternlab sweep resubmit --submit`, merges the points with
# `ternlab report merge` and checks the merged result; then searches a two-candidate layout space
# with the job `ternlab explore slurm` wrote and checks `ternlab explore report`. The daemons are
# always stopped. Installs nothing (scripts/install-deps.sh installs slurm-wlm and munge); fails,
# never skips, when a daemon does not start, printing its log. Runs as root (CI) or as a user who
# may start the daemons.
#
#   scripts/slurm-test.sh build/ternlab
set -euo pipefail
ternlab=$(realpath "${1:-build/ternlab}")
cd "$(dirname "$0")/.."
timeout_s=${TERNLAB_SLURM_TIMEOUT:-120}

fail() { echo "FAIL: slurm-test: $*" >&2; exit 1; }
for tool in munged slurmctld slurmd sbatch squeue sinfo scontrol; do
  command -v "$tool" > /dev/null || fail "$tool is not installed (scripts/install-deps.sh installs slurm-wlm and munge)"
done
[ -x "$ternlab" ] || fail "$ternlab is not a built ternlab binary"

work=$(mktemp -d /tmp/ternlab-slurm-XXXXXX)
chmod 700 "$work"
pids=()
show_logs() {
  for log in "$work"/munged.log "$work"/munged.stderr "$work"/slurmctld.log "$work"/slurmctld.stderr "$work"/slurmd.log \
    "$work"/slurmd.stderr; do
    [ -f "$log" ] && { echo "---- $log (last 40 lines)"; tail -40 "$log"; }
  done
  return 0
}
stop() {
  local rc=$?
  [ $rc -ne 0 ] && show_logs >&2
  scancel --quiet --full "${job_ids[@]}" 2> /dev/null || true
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2> /dev/null || true
  done
  rm -rf "$work"
  exit $rc
}
job_ids=()
trap stop EXIT

# Ports of its own, so a system Slurm or another test run on the host is left alone.
base=$((20000 + $$ % 20000))
ctld_port=$base slurmd_port=$((base + 1))
host=$(hostname -s)
user=$(id -un)
mkdir -p "$work"/state "$work"/spool

# munge: a fresh key, its own socket.
dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge.key"
munged --force --key-file="$work/munge.key" --socket="$work/munge.socket" --pid-file="$work/munged.pid" \
  --log-file="$work/munged.log" --seed-file="$work/munge.seed" --foreground 2> "$work/munged.stderr" &
pids+=($!)
for _ in $(seq 50); do [ -S "$work/munge.socket" ] && break; sleep 0.1; done
[ -S "$work/munge.socket" ] || fail "munged did not start"

# The node as slurmd sees it (CPUs, sockets, memory), so the controller does not drain it.
node=$(slurmd -C | head -1 | sed "s/^NodeName=[^ ]*/NodeName=$host NodeAddr=127.0.0.1/")
cat > "$work/slurm.conf" << EOF
ClusterName=ternlab-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge.socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=30
$node State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf

# In the foreground (their pids are this script's to stop); they log to their files and, in the
# foreground, to stderr as well, which goes to files beside them.
slurmctld -D -i -f "$SLURM_CONF" 2> "$work/slurmctld.stderr" &
pids+=($!)
slurmd -D -f "$SLURM_CONF" 2> "$work/slurmd.stderr" &
pids+=($!)
state=
for _ in $(seq 150); do
  for pid in "${pids[@]}"; do kill -0 "$pid" 2> /dev/null || fail "a daemon (pid $pid) exited while the cluster came up"; done
  state=$(sinfo -h -n "$host" -o %T 2> /dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || fail "the node did not come up idle within 30 s (state: '${state:-no answer from slurmctld}')"
echo "slurm-test: single-node cluster up on $host (slurmctld port $ctld_port)"

wait_for() {  # job id: until it leaves the queue, at most $timeout_s seconds
  local id=$1 t0=$SECONDS
  while [ -n "$(squeue -h -j "$id" -o %i 2> /dev/null)" ]; do
    [ $((SECONDS - t0)) -lt "$timeout_s" ] || fail "job $id still queued or running after $timeout_s s: $(squeue -j "$id")"
    sleep 0.5
  done
}

# Three points of a tiny gemv config, one CPU each.
plan=$work/plan
"$ternlab" sweep plan configs/tiny.toml --set 'shape.rows=[64,128,256]' --set rounds=1 --set warmup=0 --set ceiling_mib=4 \
  --set sample_ms=0.5 -o "$plan" --partition test --time 5 > "$work/plan.log" || fail "sweep plan: $(cat "$work/plan.log")"
grep -q -- '--array=0-2' "$plan/sweep.sbatch" || fail "sweep.sbatch has no --array=0-2: $(cat "$plan/sweep.sbatch")"
job=$(sbatch --parsable "$plan/sweep.sbatch") || fail "sbatch refused $plan/sweep.sbatch"
job=${job%%;*}
job_ids+=("$job")
echo "slurm-test: submitted array job $job"
wait_for "$job"

status=$("$ternlab" sweep status "$plan") || fail "sweep status failed"
echo "$status"
grep -q '3 points: 3 done, 0 failed, 0 incomplete, 0 missing' <<< "$status" || {
  cat "$plan"/logs/*.log >&2 || true
  fail "not every point is done"
}
for i in 000 001 002; do
  grep -q "\"SLURM_ARRAY_JOB_ID\": \"$job\"" "$plan/points/$i/exit.json" || fail "point $i: exit.json does not name array job $job"
  grep -q '"memory_bytes"' "$plan"/points/$i/tiny-*/summary.json || fail "point $i: no machine record with memory in its summary.json"
  [ -s "$plan/logs/point-$((10#$i)).log" ] || fail "point $i: no Slurm log $plan/logs/point-$((10#$i)).log"
done

# A point whose job died half-way (no exit status): resubmit runs only that one, through sbatch.
rm "$plan/points/001/exit.json"
"$ternlab" sweep resubmit "$plan" --submit > "$work/resubmit.log" || fail "sweep resubmit: $(cat "$work/resubmit.log")"
grep -q -- '--array=1$' "$plan/resubmit.sbatch" || fail "resubmit.sbatch is not an array of point 1: $(cat "$plan/resubmit.sbatch")"
again=$(grep -o 'Submitted batch job [0-9]*' "$work/resubmit.log" | grep -o '[0-9]*$') || fail "no job id from sbatch: $(cat "$work/resubmit.log")"
job_ids+=("$again")
wait_for "$again"
grep -q "\"SLURM_ARRAY_JOB_ID\": \"$again\"" "$plan/points/001/exit.json" || fail "point 1 was not rerun by job $again"
"$ternlab" sweep status "$plan" | grep -q '3 done' || fail "after the resubmit not every point is done"

"$ternlab" report merge "$plan" -o "$work/report" > "$work/report.log" || fail "report merge: $(cat "$work/report.log")"
done_points=$(grep -c '"state": "done"' "$work/report/merged.json")
[ "$done_points" = 3 ] || fail "merged.json holds $done_points done points, expected 3"
[ "$(grep -c '<article class="results">' "$work/report/index.html")" = 3 ] || fail "the merged page does not hold 3 results folders"
echo "slurm-test: 3 points run by Slurm arrays $job and $again, merged into one report: passed"

# A layout space searched by a Slurm job (`ternlab explore slurm`: one job per CPU model, each into
# its own machines/<job>-<host> folder inside the plan), then reported per machine.
cat > "$work/space.toml" << 'EOS'
name = "slurm-test"
family = "row_pairs"
prefix = "slurm"
compare = ["t2p"]
[axes]
scales = ["before", "after"]
[measure]
gemv = "256x1024"
gemm = "256x1024"
gemm_tokens = [4]
weights = "warm"
first_sample_ms = 1
sample_ms = 1
first_rounds = 1
rounds = 1
leaders = 1
ceiling_mib = 4
decode = "none"
EOS
"$ternlab" explore plan "$work/space.toml" -o "$work/explore" --no-configure > "$work/explore-plan.log" ||
  fail "explore plan: $(cat "$work/explore-plan.log")"
"$ternlab" explore slurm "$work/explore" --partition test --time 5 > "$work/explore-slurm.log" ||
  fail "explore slurm: $(cat "$work/explore-slurm.log")"
ejob=$(sbatch --parsable "$work/explore/explore.sbatch") || fail "sbatch refused $work/explore/explore.sbatch"
ejob=${ejob%%;*}
job_ids+=("$ejob")
wait_for "$ejob"
"$ternlab" explore report "$work/explore" > "$work/explore-report.log" ||
  fail "explore report: $(cat "$work/explore-report.log") $(cat "$work"/explore/logs/*.log)"
grep -q "| machines/$ejob-$host | round-3-gemm, 1 thread, 4 tokens |" "$work/explore-report.log" ||
  fail "the report has no gemm round of job $ejob on $host: $(cat "$work/explore-report.log") $(cat "$work"/explore/logs/*.log)"
echo "slurm-test: a layout space searched by Slurm job $ejob, reported per machine: passed"
