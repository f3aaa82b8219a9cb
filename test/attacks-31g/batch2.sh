#!/bin/bash
# atk31g batch 2 (after batch 1 was cut after its 3rd afail run): moveg.mjs (= moveb.mjs + new modes + which replay records came twice)
cd "$(dirname "$0")/../.."
R=test/attacks-31g/run.sh
while pgrep -f "run.sh moveb.mjs calloff-a-down" >/dev/null; do sleep 3; done
for i in 1 2; do A_FAILOVER=1 REPLAY=1 A=2 KILL_DELAY_MS=50 $R "g:moveg.mjs calloff-a-down"; done
REPLAY=1 $R "g:moveg.mjs twice"; REPLAY=1 $R "g:moveg.mjs reload-b"; REPLAY=1 $R "g:moveg.mjs reconnect-b"
for i in 1 2; do
REPLAY=1 $R "moveb.mjs kill-b-import"; REPLAY=1 $R "moveb.mjs kill-b-start"; REPLAY=1 B=2 $R "moveb.mjs calloff-b-start"
REPLAY=1 KILL_DELAY_MS=100 $R "31c:move-b-down"; REPLAY=1 A=2 $R "moveb.mjs a-down-nomove"; $R "moveb.mjs slave-nomove"
[ $i = 1 ] && { REPLAY=1 $R "g:moveg.mjs twice"; REPLAY=1 $R "g:moveg.mjs reload-b"; REPLAY=1 $R "g:moveg.mjs reconnect-b"; }
done
