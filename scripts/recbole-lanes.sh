#!/usr/bin/env bash
# The RecBole reference runs still missing from docs/ (issues 31, 32, 34; FFM's own runs), on two one-thread
# lanes at nice 19, each through scripts/recbole-queue.sh (resumable; a run already recorded in
# docs/recbole-*/ is skipped, so this list may lag behind without harm):
#
#   RB_WORK=/work/rb bash scripts/recbole-lanes.sh     # RB_WORK as recbole-queue.sh wants it
#
# Issue 32's sequential runs come first in both lanes (they are most of what is left), then NAIS 2022
# (≈ 12 min an epoch) and FFM. Their output goes to RB_WORK/queue-all.log.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${RB_WORK:?set RB_WORK to the RecBole working folder}"
lane_a="SRGNN:2020:seq SRGNN:2021:seq SRGNN:2022:seq GRU4RecF:2021:seq GRU4RecF:2022:seq NextItNet:2020:seq GCSAN:2020:seq
        NextItNet:2022:seq NAIS:2022:general FFM:2021:ctx"
lane_b="BERT4Rec:2022:seq NAIS:2020:general NAIS:2021:general GCSAN:2021:seq NextItNet:2021:seq GCSAN:2022:seq FFM:2020:ctx
        FFM:2022:ctx"
for jobs in "$lane_a" "$lane_b"; do
  # shellcheck disable=SC2086  # one job per word
  RB_LANE=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 setsid nohup bash "$here/recbole-queue.sh" $jobs >> "$RB_WORK/queue-all.log" 2>&1 < /dev/null &
done
echo "two lanes started; progress: tail -f $RB_WORK/out/*.log $RB_WORK/general/*.log"
