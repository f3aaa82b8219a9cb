#!/bin/bash
# batch 2 (after batch 1): merge main, build; one h3 trial; the nemesis seed 27 x3, seeds 5 and 2027 once
cd /work/wt-atk27h
while kill -0 $(cat /tmp/atk27h/batch1.pid) 2>/dev/null; do sleep 5; done
git merge main -m "merge main into atk27h" >> /tmp/atk27h/batch2.log 2>&1; nice -n 5 npm run build >> /tmp/atk27h/batch2.log 2>&1
test/attacks-27h/runs/r.sh h3-slave-1 test/attacks-27h/h3-restart-during-catchup.mjs
N=test/attacks-27h/runs/nem.sh
$N n27-1 27; $N n27-2 27; $N n5 5; $N n27-3 27; $N n2027 2027
