#!/usr/bin/env bash
# RecBole 1.2.1's reference runs, one at a time, each resumable across sessions:
#
#   RB_WORK=/work/rb bash scripts/recbole-queue.sh MODEL:SEED:KIND …
#
# KIND is seq (sequential), general, or ctx (context-aware: validation every 10 epochs, as
# docs/recbole-general.md's context rows were run). RB_WORK holds RecBole's copy of the data
# (data/ml100k/ with .inter, .user, .item) and receives out/ (seq) and general/ (the rest):
# TAG.json, TAG.log, and while a run is unfinished its TAG.state.pth. A job whose JSON exists
# is skipped, as is one already recorded in docs/recbole-*/, so the same command after a session ends continues where the queue stopped
# (scripts/recbole-resumable.py resumes the run in progress after its last finished epoch).
# RB_LANE=1 skips the one-job-at-a-time wait so that a second queue with a disjoint job list can
# run beside this one (set OMP_NUM_THREADS=1 for both: RecBole's small CPU ops gain little from
# a second thread, so two one-thread lanes finish more runs an hour than one two-thread queue).
set -u
# Below everything else the machine runs: with the kernel's autogroups (Linux's default for
# sessions), `nice` weighs a process only against its own session's, so a queue started with
# setsid shared the cores equally with builds and timings whatever its nice; its group's own
# nice puts it behind them.
[ -w /proc/self/autogroup ] && echo 19 > /proc/self/autogroup 2>/dev/null
here=$(cd "$(dirname "$0")" && pwd)
cd "${RB_WORK:?set RB_WORK to the RecBole working folder}"
PY=${RB_PYTHON:-$HOME/.cache/recbole-1.2.1/pinned/bin/python}
[ "${RB_LANE:-0}" = 1 ] || while pgrep -f 'run_rb.py|recbole-resumable.py' > /dev/null; do sleep 20; done   # one job at a time
for job in "$@"; do
  IFS=: read -r m s kind <<< "$job"
  dir=general; extra="seed=$s"
  [ "$kind" = seq ] && dir=out
  [ "$kind" = ctx ] && extra="seed=$s eval_step=10"
  mkdir -p "$dir"
  [ -f "$dir/$m-seed$s.json" ] && continue
  recorded="$here/../docs/recbole-$([ "$kind" = seq ] && echo sequential || echo general)/$m-seed$s.json"
  [ -f "$recorded" ] && { echo "$(date +%H:%M) $job already recorded in docs/"; continue; }
  /usr/bin/time -v nice -n 19 "$PY" "$here/recbole-resumable.py" "$m" --dataset ml100k --data-path data/ --tag "$m-seed$s" --out "$dir" \
      --extra $extra >> "$dir/$m-seed$s.log" 2>&1
  echo "$(date +%H:%M) done $job"
done
