#!/bin/bash
# part 1 continued
cd /work/wt-atk27i; R=test/attacks-27i/runs/r.sh; S=test/attacks-27h/h3-restart-during-catchup.mjs
$R h3-heavy-3 $S BURST=3 P=6 DELAY=500
$R h3-heavy-d0-1 $S BURST=3 P=6 DELAY=0
$R h3-heavy-d1000-1 $S BURST=3 P=6 DELAY=1000
