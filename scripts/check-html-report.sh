#!/usr/bin/env bash
# Renders the HTML report of a small sweep in headless Chromium and checks, from the
# screenshot's pixels, that the four charts (users with a hit, repeat-hit share, users with
# a new-item hit, coverage) are drawn. Needs `apt-get install chromium` and python3.
# Usage: scripts/check-html-report.sh [path/to/recbench]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/debug/recbench}
command -v chromium >/dev/null || { echo "check-html-report: chromium is not installed (apt-get install chromium)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" sweep --config Configs/mart.yml --models Pop,EASE --set "results_dir=$work/results" --set history_mask=none --quiet 2>/dev/null
"$bin" report "$work/results" --format html -o "$work/report.html" >/dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1100 \
  --screenshot="$work/report.png" "file://$work/report.html" >/dev/null 2>&1
python3 scripts/png_colours.py "$work/report.png" '#4e79a7' '#f28e2b' '#59a14f' '#e15759'
