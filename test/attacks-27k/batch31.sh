#!/bin/bash
# atk27k (b): atk31j batch.sh, paths changed: runs test/attacks-31g/run.sh 31c:move-b-down one at a time,
# each with the env given as "VAR=x|VAR=y" (or "-" for none), moves the run log to test/attacks-27k/logs/ and copies the brokers' logs (/tmp/atk31c-move-b-down-*) next to the run log.
# Usage: test/attacks-27k/batch.sh "REPLAY=1|KILL_DELAY_MS=100" ...
cd "$(dirname "$0")/../.."
mkdir -p test/attacks-27k/logs/brokers
for e in "$@"; do
  before=$(ls /tmp/atk31c-move-b-down-*.log 2>/dev/null | sort)
  envs=(); [ "$e" != "-" ] && IFS='|' read -ra envs <<< "$e"
  out=$(env "${envs[@]}" test/attacks-31g/run.sh 31c:move-b-down)
  log=${out%%:*}
  after=$(ls /tmp/atk31c-move-b-down-*.log 2>/dev/null | sort)
  new=$(comm -13 <(echo "$before") <(echo "$after"))
  tag=$(echo "$e" | sed 's/B_STOPS=.*/stops/' | tr '=|' '-_' | sed 's/KILL_DELAY_MS/d/; s/REPLAY-1/replay/'); n=1; while [ -e "test/attacks-27k/logs/move-b-down-$tag-$n.log" ]; do n=$((n+1)); done
  base=move-b-down-$tag-$n
  for f in $new; do gzip -c "$f" > "test/attacks-27k/logs/brokers/$base-$(basename "$f" .log | sed 's/.*-//').log.gz"; done
  mv "$log" "test/attacks-27k/logs/$base.log"
  echo "$(date -u +%T) [$e] test/attacks-27k/logs/$base.log: ${out#*: }"
done
