#!/bin/bash
# Runs angles one at a time under nice -n 5, each log in logs/MODE-runN.log (N = next free). Usage: run.sh MODE...
# A MODE with a .mjs name runs that script of test/attacks-31b/ (its own args after it, quoted: "angles.mjs triple").
cd "$(dirname "$0")/../.."
for m in "$@"; do
  name=$(echo "$m" | tr ' ' '_'); n=1; while [ -e "test/attacks-31c/logs/$name-run$n.log" ]; do n=$((n+1)); done
  log=test/attacks-31c/logs/$name-run$n.log
  case "$m" in *.mjs*) cmd="node test/attacks-31b/$m";; *) cmd="node test/attacks-31c/calloff.mjs $m";; esac
  { echo "== $m start $(date -u +%T) $(uptime)"; timeout -s TERM 300 nice -n 5 $cmd; echo "== rc $? end $(date -u +%T) $(uptime)"; } > "$log" 2>&1
  echo "$log: $(grep -E '^(HELD|BROKEN)' "$log" | head -1 | cut -c1-300)"
done
