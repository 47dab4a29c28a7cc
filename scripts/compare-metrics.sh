#!/usr/bin/env bash
# Runs every registered model on the shipped datasets (and, when ../shared is beside the
# repository, on RecBole's split of ml-100k) with two recbench binaries, and checks that
# their metrics, analyses and per-epoch losses are bit-identical. For refactorings that
# must not change behaviour: build the old commit into another folder and compare.
#   scripts/compare-metrics.sh OLD_BINARY NEW_BINARY [MODEL ...]
# Runs use threads: 2 (results depend on the thread count, not on the machine's cores).
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: compare-metrics.sh OLD_BINARY NEW_BINARY [MODEL ...]}
new=${2:?usage: compare-metrics.sh OLD_BINARY NEW_BINARY [MODEL ...]}
shift 2
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(Pop RepeatPop ItemKNN EASE BPR MultiDAE MultiVAE RecVAE)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
setups=("ml100k|--config Configs/ml-100k.yml --set threads=2"
        "mart|--config Configs/mart.yml --set threads=2 --set history_mask=none --set epochs=15")
if [ -d ../shared/reference/ml-100k-recbole-split ]; then
  setups+=("recbole-split|--config Configs/ml-100k.yml --set threads=2 --set data_path=../shared/reference/ml-100k-recbole-split --set benchmark_filename=[train,valid,test]")
fi
status=0
for model in "${models[@]}"; do
  for setup in "${setups[@]}"; do
    name=${setup%%|*}; args=${setup#*|}
    for side in old new; do
      bin=$old; [ $side = new ] && bin=$new
      # shellcheck disable=SC2086
      "$bin" run --model "$model" $args --set checkpoint_dir=null --json --no-save --quiet > "$work/$side.json"
    done
    if python3 - "$work/old.json" "$work/new.json" <<'PY'
import json, sys
old, new = (json.load(open(p)) for p in sys.argv[1:3])
def view(r):
    t = r.get("training") or {}
    return {"valid": r["valid"], "test": r["test"], "analyses": r["analyses"], "split": r["split_fingerprint"],
            "losses": [e["loss"] for e in t.get("epochs", [])], "valids": [e.get("valid") for e in t.get("epochs", [])],
            "best": t.get("best_epoch")}
a, b = view(old), view(new)
if a != b:
    for k in a:
        if a[k] != b[k]:
            print(f"  {k} differs: old {str(a[k])[:300]}\n  {' ' * len(k)}        new {str(b[k])[:300]}")
    sys.exit(1)
PY
    then echo "same       $model on $name"
    else echo "DIFFERENT  $model on $name"; status=1
    fi
  done
done
exit $status
