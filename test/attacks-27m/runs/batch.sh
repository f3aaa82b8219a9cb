#!/bin/bash
# atk27m: the brief's sequence, one run at a time: (1) i2 LEASE=5 x2, (2) LEASE=2 x2, (3) nemesis seed 27; stops starting runs at 02:15 UTC
cd /work/wt-atk27m
I2=test/attacks-27i/i2-replays-across-failover.mjs
A="FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000"
late() { [ "$(date -u +%H%M)" -ge 0215 ]; }
for i in 1 2; do late && exit 0; test/attacks-27m/runs/r.sh i2-w30-lease5-$i $I2 $A LEASE=5; done
for i in 1 2; do late && exit 0; test/attacks-27m/runs/r.sh i2-w30-$i $I2 $A LEASE=2; done
late && exit 0; test/attacks-27m/runs/nem.sh n27-1 27
