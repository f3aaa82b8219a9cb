#!/bin/bash
# (31h copy of attacks-31g/run.sh: logs in test/attacks-31h/logs, broker logs of each run gzipped into logs/brokers/<run name>/)
# Usage: run.sh MODE...   MODE "31c:X" runs test/attacks-31c/calloff.mjs X; "g:X.mjs args" runs test/attacks-31g/X.mjs; "h:X.mjs args" test/attacks-31h/X.mjs; "X.mjs args" runs test/attacks-31e/X.mjs args.
cd "$(dirname "$0")/../.."
for m in "$@"; do
  name=$(echo "$m${REPLAY:+-replay}${KILL2:+-kill2}${A_FAILOVER:+-afail}${A:+-A$A}${B:+-B$B}" | tr ' :' '__'); n=1; while [ -e "test/attacks-31h/logs/$name-run$n.log" ]; do n=$((n+1)); done
  log=test/attacks-31h/logs/$name-run$n.log
  case "$m" in 31c:*) cmd="node test/attacks-31c/calloff.mjs ${m#31c:}";; *) case "$m" in g:*) cmd="node test/attacks-31g/${m#g:}";; h:*) cmd="node test/attacks-31h/${m#h:}";; *) cmd="node test/attacks-31e/$m";; esac;; esac
  stamp=$(mktemp); sleep 1
  { echo "== $m start $(date -u +%T) env STOP_MS=$STOP_MS STOP_DELAY_MS=$STOP_DELAY_MS REPLAY=$REPLAY KILL_DELAY_MS=$KILL_DELAY_MS A=$A B=$B A_FAILOVER=$A_FAILOVER; $(git log --oneline -1 | cut -c1-60); $(uptime)"; timeout -s TERM 300 nice -n 5 $cmd; echo "== rc $? end $(date -u +%T) $(uptime)"; } > "$log" 2>&1
  d=test/attacks-31h/logs/brokers/$name-run$n; mkdir -p "$d"
  for f in $(find /tmp -maxdepth 1 -name 'atk31*.log' -newer "$stamp"); do gzip -c "$f" > "$d/$(basename "$f").gz" && rm -f "$f"; done
  rm -f "$stamp"
  echo "$log: $(grep -E '^(HELD|BROKEN)' "$log" | head -1 | cut -c1-400)"
done
