#!/bin/bash
# Runs the new angles one at a time under nice, logging output and load. Usage: run-angles.sh [script args ...]
cd "$(dirname "$0")/../.."
for s in "$@"; do
  name=$(echo "$s" | tr ' ' '_')
  log=test/attacks-31b/logs/angle-$name.log
  { echo "== $s start $(date -u +%T) $(uptime)"; timeout -s TERM 240 nice -n 10 node test/attacks-31b/$s; echo "== rc $? end $(date -u +%T) $(uptime)"; } > "$log" 2>&1
done
