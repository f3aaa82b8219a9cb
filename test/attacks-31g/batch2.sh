#!/bin/bash
# atk31g batch 2: the new angles (moveg.mjs), one at a time, after batch 1.
cd "$(dirname "$0")/../.."
R=test/attacks-31g/run.sh
while kill -0 "$(cat /tmp/atk31g-batch1.pid)" 2>/dev/null; do sleep 5; done
for i in 1 2; do REPLAY=1 $R "g:moveg.mjs twice"; REPLAY=1 $R "g:moveg.mjs reload-b"; REPLAY=1 $R "g:moveg.mjs reconnect-b"; done
