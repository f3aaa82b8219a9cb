#!/bin/bash
# batch 6 (after batch 5; the machine had gone quiet, load 3): heavier traffic from the scripts themselves instead of
# a loaded machine: g2 with 6 producers sending 3 every 2 ms (x3), h3 slave with the same (x1)
cd /work/wt-atk27h
while kill -0 $(cat /tmp/atk27h/batch5.pid) 2>/dev/null; do sleep 5; done
R=test/attacks-27h/runs/r.sh
for i in 1 2 3; do $R g2-heavy-$i test/attacks-27h/g2-retained-kill.mjs BURST=3 GAP=2 P=6; done
$R h3-slave-heavy-1 test/attacks-27h/h3-restart-during-catchup.mjs BURST=3 P=6 DELAY=500
