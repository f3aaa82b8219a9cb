#!/bin/bash
# 31h batch 4: after the fixes (dist built from chk31h 1d66d41), one at a time
cd "$(dirname "$0")"
for i in 1 2 3; do REPLAY=1 A=2 ./run.sh "h:moveh.mjs calloff-a-stop"; done
for i in 1 2; do A_FAILOVER=1 REPLAY=1 A=2 KILL_DELAY_MS=50 ./run.sh "g:moveg.mjs calloff-a-down"; done
REPLAY=1 A=2 ./run.sh "g:moveg.mjs a-down-nomove"
REPLAY=1 B=2 ./run.sh "g:moveg.mjs calloff-b-start"
REPLAY=1 KILL_DELAY_MS=100 ./run.sh 31c:move-b-down
