#!/bin/bash
# atk27m: runs added after the brief's sequence while the time box allowed: i2 LEASE=5 (N1 came at leaseTtl 5); no start after 02:08 UTC
cd /work/wt-atk27m
until grep -q " n27-1 " test/attacks-27m/runs/runner.log; do sleep 5; done
I2=test/attacks-27i/i2-replays-across-failover.mjs
A="FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000"
for i in 3 4; do [ "$(date -u +%H%M)" -ge 0208 ] && exit 0; test/attacks-27m/runs/r.sh i2-w30-lease5-$i $I2 $A LEASE=5; done
