#!/bin/bash
# atk27k: the brief's sequence, one run at a time: (a) i2 LEASE=2 x2, LEASE=5 x1; (b) atk31j's move-b-down x2; (c) nemesis seed 27
cd /work/wt-atk27k
I2=test/attacks-27i/i2-replays-across-failover.mjs
A="FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000"
test/attacks-27k/runs/r.sh i2-w30-1 $I2 $A LEASE=2
test/attacks-27k/runs/r.sh i2-w30-2 $I2 $A LEASE=2
test/attacks-27k/runs/r.sh i2-w30-lease5-1 $I2 $A LEASE=5
for i in 1 2; do { echo "# begin $(date -u +%T) $(uptime | sed 's/.*load/load/')"; test/attacks-27k/batch31.sh "REPLAY=1|KILL_DELAY_MS=100"; echo "# end $(date -u +%T) $(uptime | sed 's/.*load/load/')"; } >> test/attacks-27k/runs/mbd.out 2>&1; done
test/attacks-27k/runs/nem.sh n27-1 27
