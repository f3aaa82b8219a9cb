#!/bin/bash
# 31h batch 1: F2, F3, F4 re-runs on main 40f7b2f, one at a time
cd "$(dirname "$0")"
for i in 1 2 3; do
  REPLAY=1 B=2 ./run.sh "g:moveg.mjs calloff-b-start"
  A_FAILOVER=1 REPLAY=1 A=2 KILL_DELAY_MS=50 ./run.sh "g:moveg.mjs calloff-a-down"
  REPLAY=1 KILL_DELAY_MS=100 ./run.sh 31c:move-b-down
done
REPLAY=1 A=2 ./run.sh "g:moveg.mjs a-down-nomove"
REPLAY=1 A=2 ./run.sh "g:moveg.mjs a-down-nomove"
