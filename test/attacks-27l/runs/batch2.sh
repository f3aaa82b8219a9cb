#!/bin/bash
# atk27l: runs added while the time box allowed, after batch.sh: one more (b) run (F2 again?) and one more (a) run (F1 again?)
cd /work/wt-atk27l
while kill -0 "$(cat /tmp/atk27l/batch.pid)" 2>/dev/null; do sleep 5; done
I2=test/attacks-27i/i2-replays-across-failover.mjs
A="FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000"
test/attacks-27l/runs/r.sh i2-w30-lease5-3 $I2 $A LEASE=5
test/attacks-27l/runs/r.sh i2-w30-6 $I2 $A LEASE=2
