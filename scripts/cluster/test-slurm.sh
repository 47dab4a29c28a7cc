#!/usr/bin/env bash
# Local test of slurm-sweep.sh on a real one-node Slurm: installs Debian's slurm-wlm and
# munge, starts munged, slurmctld and slurmd from a generated slurm.conf (state in a temp
# folder), then on the shipped ml-100k:
#   1. a single-process `recbench sweep --models Pop,ItemKNN,EASE,BPR` for reference;
#   2. `sbatch --array=1-2` of slurm-sweep.sh into one results folder; task 1 is cancelled
#      once it has stored its first run, then resubmitted alone;
#   3. checks that `recbench report` of the shards equals the reference (every metric), and
#      that the resubmitted task recomputed none of the runs it had finished.
# Installs and starts system services (as root): not part of CI. Usage: test-slurm.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
recbench=$repo/.build/release/recbench
[ -x "$recbench" ] || { echo "build first: swift build -c release" >&2; exit 2; }
command -v slurmctld > /dev/null || apt-get install -y -q slurm-wlm munge > /dev/null
work=$(mktemp -d /tmp/recbench-slurm-XXXXXX)
host=$(hostname -s)
mkdir -p "$work/state" "$work/spool" /etc/slurm /run/munge
[ -f /etc/munge/munge.key ] || mungekey --create > /dev/null 2>&1 || /usr/sbin/create-munge-key > /dev/null
chown -R munge: /etc/munge /run/munge 2>/dev/null || true
pgrep munged > /dev/null || runuser -u munge -- /usr/sbin/munged 2>/dev/null || /usr/sbin/munged --force
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=recbench-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
cleanup() { scancel --user=root 2>/dev/null || true; pkill -x slurmctld || true; pkill -x slurmd || true; }
trap cleanup EXIT
slurmctld -i
slurmd
for _ in $(seq 50); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 0.2; done
sinfo

cd "$work"
{ cat "$repo/scripts/cluster/test-sweep.yml"; echo "data_path: $repo/Datasets"; } > sweep.yml
models=Pop,ItemKNN,EASE,BPR
"$recbench" sweep --config sweep.yml --models $models --set results_dir=reference --quiet
"$recbench" sweep --config sweep.yml --models $models --shard 1/2 --list

export RECBENCH=$recbench
job=$(sbatch --parsable --array=1-2 "$repo/scripts/cluster/slurm-sweep.sh" 2 --config sweep.yml --models $models --set results_dir=shards)
echo "submitted array job $job"
# Cancel task 1 once it has stored a run (a node lost mid-shard), then resubmit it alone.
for _ in $(seq 600); do
    [ -n "$(ls shards/ml-100k/*.peruser.json 2>/dev/null)" ] && break
    sleep 0.1
done
scancel "${job}_1" || true
while squeue -h -j "$job" 2>/dev/null | grep -q .; do sleep 0.5; done
before=$(ls shards/ml-100k/*.json 2>/dev/null | grep -v -e peruser -e failed | xargs -r stat -c '%n %Y.%y' | sort)
job2=$(sbatch --parsable --array=1 "$repo/scripts/cluster/slurm-sweep.sh" 2 --config sweep.yml --models $models --set results_dir=shards)
while squeue -h -j "$job2" 2>/dev/null | grep -q .; do sleep 0.5; done
cat recbench-sweep-*.log | grep -E "sweep:|already done" || true

python3 "$repo/scripts/cluster/compare_reports.py" "$recbench" reference shards "slurm: 2 array tasks (task 1 cancelled mid-run and resubmitted)"
after=$(ls shards/ml-100k/*.json | grep -v -e peruser -e failed | xargs -r stat -c '%n %Y.%y' | sort)
# Every record stored before the resubmission is untouched by it.
missing=$(comm -23 <(echo "$before") <(echo "$after") | grep -c . || true)
echo "slurm: $(echo "$before" | grep -c .) run(s) finished before the resubmission, $missing of them recomputed"
[ "$missing" -eq 0 ]
