#!/bin/bash
# batch 4 (after batch 3): merge main, build; g2 BURST x4 and the nemesis seed 27 once on the newest main (g34's G4 fix)
cd /work/wt-atk27h
while kill -0 $(cat /tmp/atk27h/batch3.pid) 2>/dev/null; do sleep 5; done
git merge main -m "merge main into atk27h" > /tmp/atk27h/merge4.log 2>&1; nice -n 5 npm run build >> /tmp/atk27h/merge4.log 2>&1
R=test/attacks-27h/runs/r.sh
for i in 11 12 13 14; do $R g2-b-$i test/attacks-27h/g2-retained-kill.mjs BURST=2 GAP=2 P=4; done
test/attacks-27h/runs/nem.sh n27-4 27
