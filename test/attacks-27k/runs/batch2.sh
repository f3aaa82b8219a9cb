#!/bin/bash
# atk27k: more runs while the time box allows, after batch.sh: (a) LEASE=2 once more, (b) twice more, (a) LEASE=2 once more
cd /work/wt-atk27k
while kill -0 "$(cat /tmp/atk27k/batch.pid)" 2>/dev/null; do sleep 5; done
I2=test/attacks-27i/i2-replays-across-failover.mjs
A="FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000"
test/attacks-27k/runs/r.sh i2-w30-3 $I2 $A LEASE=2
for i in 1 2; do { echo "# begin $(date -u +%T) $(uptime | sed 's/.*load/load/')"; test/attacks-27k/batch31.sh "REPLAY=1|KILL_DELAY_MS=100"; echo "# end $(date -u +%T) $(uptime | sed 's/.*load/load/')"; } >> test/attacks-27k/runs/mbd.out 2>&1; done
[ "$(date -u +%H%M)" -lt 2302 ] && test/attacks-27k/runs/r.sh i2-w30-4 $I2 $A LEASE=2
