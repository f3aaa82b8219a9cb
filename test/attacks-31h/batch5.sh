#!/bin/bash
# chk31i (2026-12-07): call-off runs on main fd6c950, one at a time
cd "$(dirname "$0")"
for i in 1 2 3; do
  A=2 REPLAY=1 KILL_DELAY_MS=50 ./run.sh "h:moveh.mjs calloff-a-down-stagger"
  A_FAILOVER=1 REPLAY=1 KILL_DELAY_MS=50 ./run.sh "h:moveh.mjs calloff-a-down"
done
