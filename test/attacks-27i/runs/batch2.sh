#!/bin/bash
# after h3-heavy-2 (batch1 stopped after it, to run the new scenario early): i2 first runs, then the rest of part 1
cd /work/wt-atk27i; R=test/attacks-27i/runs/r.sh; S=test/attacks-27h/h3-restart-during-catchup.mjs; I=test/attacks-27i/i2-replays-across-failover.mjs
while kill -0 16268 2>/dev/null; do sleep 2; done
$R i2-1 $I
