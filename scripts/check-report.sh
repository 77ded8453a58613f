#!/usr/bin/env bash
# Renders a cmdlog HTML report in headless Chromium and saves a screenshot: the check
# that a report is self-contained and renders. Needs Debian's chromium
# (apt-get install chromium). Run from the repository root.
# Usage: scripts/check-report.sh [REPORT.html] [OUT.png]
# Without a report it builds a small log in a temp folder and reports on that.
set -euo pipefail
report=${1:-}
shot=${2:-report.png}
if [ -z "$report" ]; then
  cargo build --release -q
  cmdlog=$(pwd)/target/release/cmdlog
  work=$(mktemp -d)
  mkdir -p "$work/ws/.claude/commands" "$work/home"
  printf -- '---\ndescription: Review a file\n---\nReview $1 carefully\n' > "$work/ws/.claude/commands/review.md"
  run() { HOME="$work/home" "$cmdlog" --workspace "$work/ws" --log "$work/log.redb" "$@"; }
  for i in 1 2 3; do run run --session demo "/review file$i.rs" > /dev/null; done
  run run --session demo "/model two words" > /dev/null 2>&1 || true
  run report --session demo -o "$work/report.html" 2> /dev/null
  report="$work/report.html"
fi
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$(mktemp -d)" --window-size=1200,900 \
  --screenshot="$shot" "file://$(realpath "$report")" 2> /dev/null
test -s "$shot"
echo "rendered $report to $shot"
