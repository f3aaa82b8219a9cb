#!/bin/bash
# (31g copy: logs in test/attacks-31g/logs; "g:X.mjs args" runs test/attacks-31g/X.mjs) Runs angles one at a time under nice -n 5, each log in test/attacks-31g/logs/NAME-runN.log (N = next free).
# Usage: run.sh MODE...   MODE "31c:X" runs test/attacks-31c/calloff.mjs X; "X.mjs args" runs test/attacks-31e/X.mjs args.
# Env (REPLAY, KILL_DELAY_MS, B_DOWN_AT, ...) is passed through and written at the top of the log.
cd "$(dirname "$0")/../.."
for m in "$@"; do
  name=$(echo "$m${REPLAY:+-replay}${KILL2:+-kill2}${A_FAILOVER:+-afail}${A:+-A$A}${B:+-B$B}" | tr ' :' '__'); n=1; while [ -e "test/attacks-31g/logs/$name-run$n.log" ]; do n=$((n+1)); done
  log=test/attacks-31g/logs/$name-run$n.log
  case "$m" in 31c:*) cmd="node test/attacks-31c/calloff.mjs ${m#31c:}";; *) case "$m" in g:*) cmd="node test/attacks-31g/${m#g:}";; *) cmd="node test/attacks-31e/$m";; esac;; esac
  { echo "== $m start $(date -u +%T) env REPLAY=$REPLAY KILL_DELAY_MS=$KILL_DELAY_MS B_DOWN_AT=$B_DOWN_AT B_DOWN_ON=$B_DOWN_ON A=$A B=$B KILL2=$KILL2 DOWN_MS=$DOWN_MS B_STOPS=$B_STOPS; $(git log --oneline -1 | cut -c1-60); $(uptime)"; echo "== A_FAILOVER=$A_FAILOVER"; timeout -s TERM 300 nice -n 5 $cmd; echo "== rc $? end $(date -u +%T) $(uptime)"; } > "$log" 2>&1
  echo "$log: $(grep -E '^(HELD|BROKEN)' "$log" | head -1 | cut -c1-400)"
done
