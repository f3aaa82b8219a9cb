#!/bin/bash
# part 3 (regression) and more of part 1, after batch4
cd /work/wt-atk27i; R=test/attacks-27i/runs/r.sh; S=test/attacks-27h/h3-restart-during-catchup.mjs; G=test/attacks-27h/g2-retained-kill.mjs
while kill -0 $(cat /tmp/atk27i/batch4.pid) 2>/dev/null; do sleep 2; done
$R g2-1 $G BURST=2 GAP=2 P=4
$R h3-stop-heavy-1 $S MODE=stop BURST=3 P=6
test/attacks-27i/runs/nem.sh n27-1 27
$R g2-2 $G BURST=2 GAP=2 P=4
$R h3-heavy-4 $S BURST=3 P=6 DELAY=500
$R h3-p8-1 $S BURST=3 P=8 DELAY=500
$R g2-3 $G BURST=2 GAP=2 P=4
$R h3-heavy-d2500-1 $S BURST=3 P=6 DELAY=2500 DOWN=10000
$R h3-heavy-5 $S BURST=3 P=6 DELAY=500
$R h3-stop-heavy-2 $S MODE=stop BURST=3 P=6
