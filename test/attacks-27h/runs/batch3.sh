#!/bin/bash
# batch 3 (after batch 1b): merge main, build; h3 slave kills later into the catch-up (DELAY), h3 master SIGSTOPped twice
cd /work/wt-atk27h
while kill -0 $(cat /tmp/atk27h/batch1b.pid) 2>/dev/null; do sleep 5; done
git merge main -m "merge main into atk27h" > /tmp/atk27h/merge3.log 2>&1; nice -n 5 npm run build >> /tmp/atk27h/merge3.log 2>&1
R=test/attacks-27h/runs/r.sh; S=test/attacks-27h/h3-restart-during-catchup.mjs
$R h3-stop-1 $S MODE=stop
$R h3-slave-2 $S DELAY=1000
$R h3-stop-2 $S MODE=stop STOP=5000
$R h3-slave-3 $S DELAY=2500 DOWN=10000
$R h3-stop-3 $S MODE=stop
