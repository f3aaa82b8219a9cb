#!/bin/bash
# Re-runs the first check's scripts once each, one at a time, logging output and load.
cd "$(dirname "$0")/../.."
for s in "attack2-move.mjs roundtrip" "attack2-move.mjs kill-old" "attack2-move.mjs kill-new" attack3b-seed-slave-own-set.mjs attack3c-seed-master-dies.mjs "attack5-placements.mjs two" attack1-set-down.mjs attack4-etcd.mjs; do
  name=$(echo "$s" | tr ' ' '_')
  log=test/attacks-31b/logs/rerun-$name.log
  { echo "== $s start $(date -u +%T) $(uptime)"; timeout -s TERM 300 nice -n 10 node test/attacks-31/$s; echo "== rc $? end $(date -u +%T) $(uptime)"; } > "$log" 2>&1
done
echo ALLDONE > test/attacks-31b/logs/rerun.done
