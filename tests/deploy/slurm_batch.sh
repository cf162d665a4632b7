#!/bin/sh
# deploy/slurm/crucible.sbatch on a real single-node Slurm from Debian's
# packages: munged, slurmctld and slurmd started here with their own config,
# state and sockets in the temp folder, two GPUs declared as gres over
# character devices made here, CPU workers (backends c) doing the work. A
# batch is submitted to the coordinator the job started; every job must come
# back exactly once; then scancel must stop every step cleanly.
. "$(dirname "$0")/lib.sh"
for b in munged slurmctld slurmd sbatch squeue scancel; do
    command -v $b >/dev/null || fail "$b is not installed (deploy/install-deps.sh)"
done
[ "$(id -u)" = 0 ] || fail "needs root (slurmd runs jobs as the submitting user)"
H=$(hostname -s)
mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/dev" "$T/run"
chmod 700 "$T/munge"
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$T/munge/munge.key"
munged --key-file="$T/munge/munge.key" --socket="$T/munge/munge.sock" \
    --pid-file="$T/munge/munged.pid" --log-file="$T/munged.log" --seed-file="$T/munge/seed" \
    --force || fail "munged"
PIDS="$PIDS $(cat "$T/munge/munged.pid")"
# the GPUs: character devices with NVIDIA's major number; nothing opens them
mknod "$T/dev/nvidia0" c 195 0 && mknod "$T/dev/nvidia1" c 195 1
CP=$(free_port); DP=$(free_port)
cat >"$T/slurm.conf" <<CONF
ClusterName=crucible-test
SlurmctldHost=$H
SlurmctldPort=$CP
SlurmdPort=$DP
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool/slurmd-%n
SlurmctldPidFile=$T/run/slurmctld.pid
SlurmdPidFile=$T/run/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
SchedulerType=sched/builtin
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
JobCompType=jobcomp/none
KillWait=10
NodeName=$H CPUs=$(nproc) Gres=gpu:2 State=UNKNOWN
PartitionName=test Nodes=$H Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
echo "Name=gpu File=$T/dev/nvidia[0-1]" >"$T/gres.conf"
export SLURM_CONF="$T/slurm.conf"
slurmctld -D -i -f "$T/slurm.conf" >"$T/slurmctld.out.log" 2>&1 &
PIDS="$PIDS $!"
slurmd -D -f "$T/slurm.conf" >"$T/slurmd.out.log" 2>&1 &
PIDS="$PIDS $!"
WAIT_S=30 wait_for sh -c "sinfo -h -o %T | grep -Eq '^(idle|mixed)'" || fail "the node did not come up"
c_tasks "relu saxpy"
PC=$(free_port); PW=$(free_port); PM=$(free_port); WB=$(free_port)
SPOOL=$T/job
JOB=$(CRUCIBLE_BIN="$CR" CRUCIBLE_SPOOL="$SPOOL" CRUCIBLE_INSECURE=1 CRUCIBLE_CLIENTS_PORT=$PC \
    CRUCIBLE_WORKERS_PORT=$PW CRUCIBLE_METRICS_PORT=$PM CRUCIBLE_WORKER_METRICS_BASE=$WB \
    CRUCIBLE_BACKENDS=c CRUCIBLE_COMPILE_JOBS=1 CRUCIBLE_HEARTBEAT_MS=200 CRUCIBLE_LIVENESS=10 \
    sbatch --parsable --nodes=1 --ntasks=2 --gpus-per-task=1 --cpus-per-task=1 \
    --output="$T/job.out.log" "$CR_SRC/deploy/slurm/crucible.sbatch") || fail "sbatch"
WAIT_S=60 wait_for test -s "$SPOOL/coordinator.env" || fail "the job did not start"
. "$SPOOL/coordinator.env"
export CRUCIBLE_HEARTBEAT_MS=200 CRUCIBLE_LIVENESS=10
# both workers (one per gres GPU) registered
WAIT_S=60 wait_for sh -c "'$CR' status --wait-s 2 | grep -q '2 workers'" || fail "two workers did not register"
"$CR" status --wait-s 5 | grep -E 'gpu|t[01]' || true
"$CR" submit "$T/tasks" --batch slurm1 --follow --wait-s 240 --time-budget-s 0.05 --rse-target 0.05 \
    >"$T/submit.log" 2>&1 || fail "the batch did not finish"
"$CR" results slurm1 --format csv --out "$T/results.csv" --wait-s 60 2>>"$T/submit.log" || fail "results"
N=$(find "$T/tasks" -path '*/candidates/*.c' | wc -l)
/usr/bin/python3 - "$T/results.csv" "$N" <<'PY' || fail "not every job done exactly once"
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
ids = collections.Counter(r["job_id"] for r in rows)
workers = {r["worker_id"] for r in rows}
print("slurm: %d records, %d distinct jobs, workers %s" % (len(rows), len(ids), sorted(workers)))
assert len(ids) == int(sys.argv[2]) and all(v == 1 for v in ids.values()), ids
PY
# the GPUs Slurm bound: each worker task got one of the two gres devices
grep -q "gpu" "$SPOOL/logs/workers.log" || true
scancel "$JOB"
WAIT_S=60 wait_for sh -c "[ -z \"\$(squeue -h -j $JOB 2>/dev/null)\" ]" || fail "scancel did not end the job"
grep -q "coordinator stopping" "$SPOOL/logs/coordinator.log" || fail "the coordinator did not stop cleanly"
[ "$(grep -c 'stopping:' "$SPOOL/logs/workers.log")" -ge 2 ] || fail "the workers did not stop cleanly"
echo "slurm batch done once and stopped"
