#!/bin/bash
# part 2: the new scenario (after batch3)
cd /work/wt-atk27i; R=test/attacks-27i/runs/r.sh; I=test/attacks-27i/i2-replays-across-failover.mjs
while kill -0 $(cat /tmp/atk27i/batch3.pid) 2>/dev/null; do sleep 2; done
$R i2-sync-1 $I FAULTS=sync,sync,syncstop,sync
$R i2-sync-heavy-1 $I FAULTS=sync,syncstop,sync,kill BURST=3 P=6
$R i2-syncing-1 $I FAULTS=sync,sync,syncstop,sync SYNCWAIT=sync SYNCDELAY=500
$R i2-2 $I
$R i2-sync-2 $I FAULTS=sync,sync,syncstop,sync
