#!/bin/bash
# batch5 stopped after the nemesis (n27-1) to put two i2 runs with a 30 s window before the last h3 variants
cd /work/wt-atk27i; R=test/attacks-27i/runs/r.sh; S=test/attacks-27h/h3-restart-during-catchup.mjs; G=test/attacks-27h/g2-retained-kill.mjs; I=test/attacks-27i/i2-replays-across-failover.mjs
while pgrep -f "runs/nem.sh n27-1" >/dev/null; do sleep 2; done
$R g2-2 $G BURST=2 GAP=2 P=4
$R i2-sync-w30-1 $I FAULTS=sync,sync,syncstop,sync WINDOW=30000
$R h3-heavy-4 $S BURST=3 P=6 DELAY=500
$R h3-p8-1 $S BURST=3 P=8 DELAY=500
$R g2-3 $G BURST=2 GAP=2 P=4
$R i2-sync-w30-2 $I FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000
$R h3-heavy-d2500-1 $S BURST=3 P=6 DELAY=2500 DOWN=10000
$R h3-heavy-5 $S BURST=3 P=6 DELAY=500
