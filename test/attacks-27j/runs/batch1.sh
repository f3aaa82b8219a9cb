#!/bin/bash
# atk27j: the brief's sequence, one run at a time: (a) i2 sync,syncstop,sync,kill 6x3 w30 x4; (b) h3 6x3 DELAY 1000 x3, 500 x2;
# (a) with leaseTtl 5 x2; (c) i2 sync,sync,syncstop,sync x2; (d) g2 x2, nemesis seed 27
cd /work/wt-atk27j; R=test/attacks-27j/runs/r.sh; S=test/attacks-27h/h3-restart-during-catchup.mjs; I=test/attacks-27i/i2-replays-across-failover.mjs
G=test/attacks-27h/g2-retained-kill.mjs
for n in 1 2 3 4; do $R i2-w30-$n $I FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000; done
for n in 1 2 3; do $R h3-d1000-$n $S BURST=3 P=6 DELAY=1000; done
for n in 1 2; do $R h3-d500-$n $S BURST=3 P=6 DELAY=500; done
for n in 1 2; do $R i2-w30-lease5-$n $I FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000 LEASE=5; done
for n in 1 2; do $R i2-sync-$n $I FAULTS=sync,sync,syncstop,sync; done
for n in 1 2; do $R g2-$n $G BURST=2 GAP=2 P=4; done
test/attacks-27j/runs/nem.sh n27-1 27
