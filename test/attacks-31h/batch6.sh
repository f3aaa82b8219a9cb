#!/bin/bash
# chk31i batch6: two more of each on main fd6c950 (worktree wt-chk31i-base), one at a time
cd "$(dirname "$0")"
for i in 1 2; do
  A=2 REPLAY=1 KILL_DELAY_MS=50 ./run.sh "h:moveh.mjs calloff-a-down-stagger"
  A_FAILOVER=1 REPLAY=1 KILL_DELAY_MS=50 ./run.sh "h:moveh.mjs calloff-a-down"
done
