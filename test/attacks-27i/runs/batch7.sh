#!/bin/bash
# more of I3's parameters and of H1's reproduction, after batch6
cd /work/wt-atk27i; R=test/attacks-27i/runs/r.sh; S=test/attacks-27h/h3-restart-during-catchup.mjs; I=test/attacks-27i/i2-replays-across-failover.mjs
while kill -0 $(cat /tmp/atk27i/batch6.pid) 2>/dev/null; do sleep 2; done
$R i2-sync-w30-3 $I FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000
$R h3-heavy-6 $S BURST=3 P=6 DELAY=500
$R i2-sync-w30-4 $I FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000
