#!/bin/bash
# part 1 of the brief: atk27h's h3 scenario (H1's reproduction and variations), one run at a time
cd /work/wt-atk27i; R=test/attacks-27i/runs/r.sh; S=test/attacks-27h/h3-restart-during-catchup.mjs
for k in 1 2 3; do $R h3-heavy-$k $S BURST=3 P=6 DELAY=500; done
$R h3-heavy-d0-1 $S BURST=3 P=6 DELAY=0
$R h3-heavy-d1000-1 $S BURST=3 P=6 DELAY=1000
$R h3-heavy-4 $S BURST=3 P=6 DELAY=500
$R h3-heavy-d2500-1 $S BURST=3 P=6 DELAY=2500 DOWN=10000
$R h3-stop-heavy-1 $S MODE=stop BURST=3 P=6
$R h3-p8-1 $S BURST=3 P=8 DELAY=500
$R h3-heavy-5 $S BURST=3 P=6 DELAY=500
$R h3-heavy-6 $S BURST=3 P=6 DELAY=500
