#!/usr/bin/env bash
# Opens the HTML pages of a results folder, of `ternlab report` and of a merged sweep (`ternlab
# report merge` over a plan folder) in headless Chromium: each must render with no script or
# console error and draw every plot it promises (the page's check element, filled by its own
# script on load, read back through --dump-dom). Screenshots of the pages are
# left in ARTEFACT_DIR. Fails, never skips, when Chromium is missing (scripts/install-deps.sh).
#
#   tests/browser/report_page.sh build/ternlab . build/tests/artefacts
set -euo pipefail
ternlab=$(realpath "$1") src=$2 artefacts=$3

fail() { echo "FAIL: $*" >&2; exit 1; }
browser=$(command -v chromium || true)
[ -n "$browser" ] || fail "chromium is not installed (scripts/install-deps.sh installs it)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$artefacts"
cd "$src"
"$ternlab" run configs/tiny.toml --no-progress --set "output=$work/results" > "$work/run.log" || fail "ternlab run: $(tail -5 "$work/run.log")"
"$ternlab" report "$work/results" --out "$work/report" > "$work/report.log" || fail "ternlab report failed"
# A sweep's points merged: the point table and one sweep plot per machine before the folders.
"$ternlab" sweep plan configs/tiny.toml --set 'shape.rows=[64,128]' --set rounds=1 --set warmup=0 --out "$work/sweep" > "$work/sweep.log" &&
  "$ternlab" sweep run "$work/sweep" >> "$work/sweep.log" || fail "ternlab sweep: $(tail -5 "$work/sweep.log")"
"$ternlab" report merge "$work/sweep" --out "$work/sweep-report" > "$work/report.log" || fail "ternlab report merge failed"

# The browser runs as whoever runs the tests (root in CI containers, where its sandbox cannot start);
# it opens only the local pages just written.
chrome() { "$browser" --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile" "$@"; }

check_page() {  # page name
  local page=$1 name=$2
  [ -f "$page" ] || fail "$page was not written"
  rm -f "$artefacts/$name.png"
  chrome --enable-logging=stderr --v=0 --virtual-time-budget=1000 --window-size=1200,2000 --screenshot="$artefacts/$name.png" \
    --dump-dom "file://$page" > "$work/$name.dom" 2> "$work/$name.err" ||
    fail "$name: chromium exited non-zero: $(tail -3 "$work/$name.err")"
  local check expected plots drawn errors
  check=$(grep -o '<div id="page-check"[^>]*>' "$work/$name.dom") || fail "$name: no #page-check element in the rendered page"
  expected=$(grep -o 'data-expected-plots="[0-9]*"' "$work/$name.dom" | grep -o '[0-9]*')
  plots=$(grep -o 'data-plots="[0-9]*"' <<< "$check" | grep -o '[0-9]*') || fail "$name: the page's check script did not run"
  drawn=$(grep -o 'data-drawn="[0-9]*"' <<< "$check" | grep -o '[0-9]*')
  errors=$(grep -o 'data-errors="[0-9]*"' <<< "$check" | grep -o '[0-9]*')
  [ "$errors" = 0 ] || fail "$name: $errors script/console errors: $(grep -A3 'id="page-check"' "$work/$name.dom")"
  if grep ':CONSOLE' "$work/$name.err"; then fail "$name: the browser logged console messages (above)"; fi
  [ "$expected" -gt 0 ] || fail "$name: the page promises no plots"
  [ "$plots" = "$expected" ] || fail "$name: $plots plot figures, expected $expected"
  [ "$drawn" = "$expected" ] || fail "$name: $drawn of $expected plots drew"
  [ -s "$artefacts/$name.png" ] || fail "$name: no screenshot"
  echo "$name: rendered, $drawn of $expected plots drawn, no console errors; screenshot $artefacts/$name.png"
}

check_page "$(ls -d "$work"/results/tiny-*)/index.html" results-page
check_page "$work/report/index.html" comparison-page
check_page "$work/sweep-report/index.html" sweep-page
grep -q '<section class="sweep">' "$work/sweep-report/index.html" || fail "sweep-page: no point table"
