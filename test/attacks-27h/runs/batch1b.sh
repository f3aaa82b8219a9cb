#!/bin/bash
# batch 1b: after g2-b-1, -2 (on 4125ddf), merge main (15c32b2: the fix aimed at G4), build, then g2 BURST x8 and plain x2,
# one h3 trial, then the nemesis seed 27 x3, seeds 5 and 2027 (the nemesis builds again itself)
cd /work/wt-atk27h
while kill -0 28589 2>/dev/null; do sleep 2; done
git merge main -m "merge main into atk27h" > /tmp/atk27h/merge1.log 2>&1; nice -n 5 npm run build >> /tmp/atk27h/merge1.log 2>&1
R=test/attacks-27h/runs/r.sh
for i in 3 4 5 6 7 8 9 10; do $R g2-b-$i test/attacks-27h/g2-retained-kill.mjs BURST=2 GAP=2 P=4; done
for i in 1 2; do $R g2-plain-$i test/attacks-27h/g2-retained-kill.mjs; done
$R h3-slave-1 test/attacks-27h/h3-restart-during-catchup.mjs
N=test/attacks-27h/runs/nem.sh
$N n27-1 27; $N n27-2 27; $N n5 5; $N n27-3 27; $N n2027 2027
