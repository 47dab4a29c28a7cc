#!/usr/bin/env bash
# Coverage-guided fuzzing of the readers of untrusted input (issue 16): the atomic-file
# parser, the CSV reader of `convert`, and the YAML config loader with its typed settings.
# Builds `recbench-fuzz` with libFuzzer and AddressSanitizer into .build-fuzz/, seeds each
# target's corpus from the shipped datasets and configs, and runs each for SECONDS.
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]      (default: 600 s each; atomic csv config)
#
# Findings (crashes, sanitizer reports, timeouts) land in .build-fuzz/findings/; replay one
# with a plain build: `.build/release/recbench-fuzz TARGET FILE`. Exits non-zero on a
# finding. The last line is the summary: targets, seconds, runs, findings.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(atomic csv config)

swift build -c release --product recbench-fuzz --build-path .build-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING 2>&1 | grep -v "Cannot export local symbol" || true
binary=.build-fuzz/release/recbench-fuzz
[ -x "$binary" ] || { echo "fuzz.sh: the fuzz build failed (does this toolchain ship libFuzzer?)" >&2; exit 2; }

# Seed corpora: the first lines of every shipped atomic file, the shipped CSVs, every config.
seed() {
    local target=$1 dir=.build-fuzz/seeds/$1
    rm -rf "$dir" && mkdir -p "$dir"
    case $target in
        atomic) for f in Datasets/*/*.inter Datasets/*/*.item Datasets/*/*.user; do head -c 4000 "$f" > "$dir/$(basename "$f")"; done ;;
        csv)    for f in Datasets/*/csv/*.csv; do head -c 4000 "$f" > "$dir/$(basename "$f")"; done ;;
        config) cp Configs/*.yml Configs/models/*.yml Configs/bench/*.yml "$dir/" ;;
    esac
    echo "$dir"
}

total_runs=0 findings=0
for target in "${targets[@]}"; do
    corpus=.build-fuzz/corpus/$target
    mkdir -p "$corpus" .build-fuzz/findings
    seeds=$(seed "$target")
    log=.build-fuzz/$target.log
    status=0
    RECBENCH_FUZZ_TARGET=$target "$binary" "$corpus" "$seeds" -max_total_time="$seconds" -max_len=65536 \
        -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix=.build-fuzz/findings/"$target"- > "$log" 2>&1 || status=$?
    # libFuzzer may print its final stats more than once (e.g. when a worker stops early): the last count is the run's.
    runs=$(grep -o "stat::number_of_executed_units: *[0-9]*" "$log" | grep -o "[0-9]*$" | tail -n 1 || true)
    runs=${runs:-0}
    total_runs=$((total_runs + runs))
    if [ "$status" -ne 0 ]; then
        findings=$((findings + 1))
        echo "$target: FINDING after $runs runs (exit $status); see $log and .build-fuzz/findings/" >&2
        grep -m 3 -E "ERROR|Fatal error|deadly signal|timeout" "$log" >&2 || true
    else
        echo "$target: $runs runs in $seconds s, corpus $(ls "$corpus" | wc -l) inputs, no finding"
    fi
done
echo "fuzz: ${#targets[@]} targets × $seconds s, $total_runs runs, $findings findings"
[ "$findings" -eq 0 ]
