#!/bin/bash
# atk27j: batch1 cut after i2-w30-2 (runs took 6.5 min at load 13-23, the time box allows ~8 more): the scenarios interleaved
# in the brief's priority so that each is run at least once; stopped at the time box
cd /work/wt-atk27j; R=test/attacks-27j/runs/r.sh; S=test/attacks-27h/h3-restart-during-catchup.mjs; I=test/attacks-27i/i2-replays-across-failover.mjs
G=test/attacks-27h/g2-retained-kill.mjs
while pgrep -f "attacks-27j/runs/r.sh i2-w30-2 " >/dev/null; do sleep 2; done
$R h3-d1000-1 $S BURST=3 P=6 DELAY=1000
$R i2-w30-lease5-1 $I FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000 LEASE=5
$R i2-w30-3 $I FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000
$R h3-d500-1 $S BURST=3 P=6 DELAY=500
$R i2-sync-1 $I FAULTS=sync,sync,syncstop,sync
$R h3-d1000-2 $S BURST=3 P=6 DELAY=1000
$R i2-w30-lease5-2 $I FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000 LEASE=5
$R g2-1 $G BURST=2 GAP=2 P=4
$R i2-w30-4 $I FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000
$R h3-d1000-3 $S BURST=3 P=6 DELAY=1000
$R h3-d500-2 $S BURST=3 P=6 DELAY=500
$R i2-sync-2 $I FAULTS=sync,sync,syncstop,sync
$R g2-2 $G BURST=2 GAP=2 P=4
test/attacks-27j/runs/nem.sh n27-1 27
