#!/usr/bin/env bash
# Local test of ray_sweep.py on a real Ray: installs Ray from PyPI into a virtualenv
# (default ~/.cache/recbench-ray), then on the shipped ml-100k:
#   1. a single-process `recbench sweep --models Pop,ItemKNN,EASE,BPR,MultiVAE,MultiDAE` for reference;
#   2. the Ray driver with 2 shards (a local `ray.init()`), killed — driver, workers and
#      their recbench processes — once a run is stored, then rerun;
#   3. checks that `recbench report` of the shards equals the reference (every metric) and
#      that the rerun recomputed none of the runs finished before the kill.
# Downloads Ray (~200 MB): not part of CI. Usage: test-ray.sh [VENV]
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
recbench=$repo/.build/release/recbench
[ -x "$recbench" ] || { echo "build first: swift build -c release" >&2; exit 2; }
venv=${1:-$HOME/.cache/recbench-ray}
[ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q "ray[default]"; }
work=$(mktemp -d /tmp/recbench-ray-XXXXXX)
cd "$work"
{ cat "$repo/scripts/cluster/test-sweep.yml"; echo "data_path: $repo/Datasets"; } > sweep.yml
models=Pop,ItemKNN,EASE,BPR,MultiVAE,MultiDAE
"$recbench" sweep --config sweep.yml --models $models --set results_dir=reference --quiet
driver=("$venv/bin/python" "$repo/scripts/cluster/ray_sweep.py" --shards 2 --cpus-per-shard 1 --recbench "$recbench"
        -- --config sweep.yml --models $models --set results_dir=shards --quiet)

# First attempt, killed once a run is stored (a lost cluster): the whole process tree.
setsid "${driver[@]}" > first.log 2>&1 &
leader=$!
for _ in $(seq 1200); do
    [ -n "$(ls shards/ml-100k/*.peruser.json 2>/dev/null)" ] && break
    sleep 0.1
done
# Ray's workers live outside the driver's process group: kill the sweeps they started and
# those sweeps' runs at once, then the driver, then Ray itself (slow to stop).
pkill -KILL -f "recbench sweep --config sweep.yml" 2>/dev/null || true
pkill -KILL -f "recbench run --model" 2>/dev/null || true
kill -KILL -- -"$leader" 2>/dev/null || true
"$venv/bin/ray" stop --force > /dev/null 2>&1 || true
sleep 1
before=$(ls shards/ml-100k/*.json 2>/dev/null | grep -v -e peruser -e failed | xargs -r stat -c '%n %Y.%y' | sort)

"${driver[@]}"
"$venv/bin/ray" stop --force > /dev/null 2>&1 || true

python3 "$repo/scripts/cluster/compare_reports.py" "$recbench" reference shards "ray: 2 shard tasks (the first attempt killed mid-run, then rerun)"
after=$(ls shards/ml-100k/*.json | grep -v -e peruser -e failed | xargs -r stat -c '%n %Y.%y' | sort)
missing=$(comm -23 <(echo "$before") <(echo "$after") | grep -c . || true)
echo "ray: $(echo "$before" | grep -c .) run(s) finished before the kill, $missing of them recomputed"
[ "$missing" -eq 0 ]
