#!/bin/bash
# 31h batch 3: more runs of F2/F3/F4 at the load the machine has then (after batch 2 ended; one at a time)
cd "$(dirname "$0")"
while pgrep -f "batch2.sh" >/dev/null; do sleep 5; done
for i in 1 2; do
  REPLAY=1 B=2 ./run.sh "g:moveg.mjs calloff-b-start"
  A_FAILOVER=1 REPLAY=1 A=2 KILL_DELAY_MS=50 ./run.sh "g:moveg.mjs calloff-a-down"
  REPLAY=1 KILL_DELAY_MS=100 ./run.sh 31c:move-b-down
done
REPLAY=1 B=2 ./run.sh "g:moveg.mjs calloff-b-start"
REPLAY=1 A=2 ./run.sh "g:moveg.mjs a-down-nomove"
