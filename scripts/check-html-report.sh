#!/usr/bin/env bash
# Renders HTML reports in headless Chromium at 1,280 px and checks what a reader sees:
#  1. a Mart sweep (repeat purchases) under all three history masks: the mask comparison
#     (one bar colour per mask), the headline-metric chart, the four charts of the shop's
#     questions, the repeat/explore decomposition and the timing chart are drawn (screenshot
#     pixels of each bar colour), and no table is clipped with every details section open;
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

"$bin" sweep --config Configs/mart.yml --models Pop,ItemKNN,EASE --set "results_dir=$work/mart" --set history_mask=none,seen,recbole --quiet
"$bin" report "$work/mart" --format html -o "$work/mart.html" >/dev/null
chrome --window-size=1280,2600 --screenshot="$work/mart.png" "file://$work/mart.html" >/dev/null
# masks none / seen / recbole, headline, the four questions, repeat/explore (+ history share), timing
python3 scripts/png_colours.py "$work/mart.png" '#bab0ac' '#499894' '#d37295' '#2f4b7c' '#4e79a7' '#f28e2b' '#59a14f' '#e15759' \
    '#9c755f' '#76b7b2' '#b07aa1'

"$bin" sweep --config Configs/ml-100k.yml --models Pop,ItemKNN,EASE --set "results_dir=$work/ml" --quiet
"$bin" report "$work/ml" --format html -o "$work/ml.html" >/dev/null
# The probe: after layout (every details section open), list every table wider than the
# window or than its box.
layout() {
python3 - "$1" <<'PY'
import sys
path = sys.argv[1]
probe = """<script>window.addEventListener('load', () => {
  const bad = [...document.querySelectorAll('table')].filter(t =>
    t.getBoundingClientRect().right > window.innerWidth || t.parentElement.scrollWidth > t.parentElement.clientWidth);
  document.body.insertAdjacentHTML('beforeend', '<pre id="layout">tables ' + document.querySelectorAll('table').length +
    ' clipped ' + bad.length + ' width ' + window.innerWidth + '</pre>');
});</script>"""
html = open(path, encoding="utf-8").read().replace("<details>", "<details open>").replace("</body>", probe + "</body>")
open(path.replace(".html", "-probe.html"), "w", encoding="utf-8").write(html)
PY
chrome --virtual-time-budget=2000 --dump-dom "file://${1%.html}-probe.html" | grep -o '<pre id="layout">tables [0-9][^<]*' | sed 's/.*>//'
}
for page in mart ml; do
  seen=$(layout "$work/$page.html")
  echo "check-html-report: $page at 1280 px: $seen"
  [[ "$seen" =~ ^tables\ [1-9][0-9]*\ clipped\ 0\ width\ 1280$ ]] || { echo "check-html-report: a table is clipped at 1280 px ($page: $seen)" >&2; exit 1; }
done
grep -qi "no repeat hits (every hit is a new item in this data)" "$work/ml.html" || { echo "check-html-report: the all-zero repeat chart was not replaced by its note" >&2; exit 1; }
# SCREENSHOT_OUT=docs/report-mart.png keeps the Mart page's screenshot (README shows it).
if [ -n "${SCREENSHOT_OUT:-}" ]; then cp "$work/mart.png" "$SCREENSHOT_OUT"; fi
echo "check-html-report: charts drawn, tables fit, empty charts noted"
