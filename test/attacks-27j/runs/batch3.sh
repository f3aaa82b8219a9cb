#!/bin/bash
# atk27j: after batch2 (nemesis last), while the time box allows: (a) and (b) once more each at leaseTtl 2
cd /work/wt-atk27j; R=test/attacks-27j/runs/r.sh; S=test/attacks-27h/h3-restart-during-catchup.mjs; I=test/attacks-27i/i2-replays-across-failover.mjs
while kill -0 $(cat /tmp/atk27j/batch2.pid) 2>/dev/null; do sleep 2; done
$R i2-w30-5 $I FAULTS=sync,syncstop,sync,kill BURST=3 P=6 WINDOW=30000
$R h3-d1000-4 $S BURST=3 P=6 DELAY=1000
