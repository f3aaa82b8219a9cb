#!/bin/bash
# atk27l: the brief's sequence, one run at a time: (a) i2 LEASE=2 x5, (b) LEASE=5 x2, (c) nemesis seed 27 and seed 4711
cd /work/wt-atk27l
I2=test/attacks-27i/i2-replays-across-failover.mjs
A="FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000"
for i in 1 2 3 4 5; do test/attacks-27l/runs/r.sh i2-w30-$i $I2 $A LEASE=2; done
for i in 1 2; do test/attacks-27l/runs/r.sh i2-w30-lease5-$i $I2 $A LEASE=5; done
test/attacks-27l/runs/nem.sh n27-1 27
test/attacks-27l/runs/nem.sh n4711-1 4711
