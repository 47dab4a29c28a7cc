#!/usr/bin/env bash
# Renders HTML reports in headless Chromium at 1,280 px and checks what a reader sees:
#  1. a Mart sweep (repeat purchases, history_mask none): the four charts (users with a hit,
#     repeat-hit share, users with a new-item hit, coverage) and the timing chart are drawn
#     (screenshot pixels of each bar colour);
#  2. an ml-100k sweep (no repeats): no table is clipped or scrolls at 1,280 px (the page's
#     own layout, read back with --dump-dom), and the all-zero repeat chart is replaced by
#     its one-line note.
# Needs `apt-get install chromium` and python3. Usage: scripts/check-html-report.sh [recbench]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-.build/release/recbench}
command -v chromium >/dev/null || { echo "check-html-report: chromium is not installed (apt-get install chromium)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chrome() { chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1400 "$@" 2>/dev/null; }

"$bin" sweep --config Configs/mart.yml --models Pop,EASE --set "results_dir=$work/mart" --set history_mask=none --quiet
"$bin" report "$work/mart" --format html -o "$work/mart.html" >/dev/null
chrome --screenshot="$work/mart.png" "file://$work/mart.html" >/dev/null
python3 scripts/png_colours.py "$work/mart.png" '#4e79a7' '#f28e2b' '#59a14f' '#e15759' '#76b7b2' '#b07aa1'

"$bin" sweep --config Configs/ml-100k.yml --models Pop,ItemKNN,EASE --set "results_dir=$work/ml" --quiet
"$bin" report "$work/ml" --format html -o "$work/ml.html" >/dev/null
# The probe: after layout, list every table wider than the window or than its box.
python3 - "$work/ml.html" <<'PY'
import sys
path = sys.argv[1]
probe = """<script>window.addEventListener('load', () => {
  const bad = [...document.querySelectorAll('table')].filter(t =>
    t.getBoundingClientRect().right > window.innerWidth || t.parentElement.scrollWidth > t.parentElement.clientWidth);
  document.body.insertAdjacentHTML('beforeend', '<pre id="layout">tables ' + document.querySelectorAll('table').length +
    ' clipped ' + bad.length + ' width ' + window.innerWidth + '</pre>');
});</script>"""
html = open(path, encoding="utf-8").read().replace("</body>", probe + "</body>")
open(path.replace(".html", "-probe.html"), "w", encoding="utf-8").write(html)
PY
chrome --virtual-time-budget=2000 --dump-dom "file://$work/ml-probe.html" > "$work/ml-dom.html"
layout=$(grep -o '<pre id="layout">tables [0-9][^<]*' "$work/ml-dom.html" | sed 's/.*>//')
echo "check-html-report: ml-100k at 1280 px: $layout"
[[ "$layout" =~ ^tables\ [1-9][0-9]*\ clipped\ 0\ width\ 1280$ ]] || { echo "check-html-report: a table is clipped at 1280 px ($layout)" >&2; exit 1; }
grep -qi "no repeat hits (every hit is a new item in this data)" "$work/ml.html" || { echo "check-html-report: the all-zero repeat chart was not replaced by its note" >&2; exit 1; }
if [ -n "${SCREENSHOT_OUT:-}" ]; then chrome --screenshot="$SCREENSHOT_OUT" "file://$work/ml.html" >/dev/null; fi
echo "check-html-report: charts drawn, tables fit, empty charts noted"
