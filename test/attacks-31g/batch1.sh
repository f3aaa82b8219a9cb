#!/bin/bash
# atk31g batch 1: re-runs of the 31e/31f modes on today's main, one at a time.
cd "$(dirname "$0")/../.."
R=test/attacks-31g/run.sh
for i in 1 2 3 4 5; do A_FAILOVER=1 REPLAY=1 A=2 KILL_DELAY_MS=50 $R "moveb.mjs calloff-a-down"; done
for i in 1 2; do REPLAY=1 $R "moveb.mjs kill-b-import"; done
for i in 1 2; do REPLAY=1 $R "moveb.mjs kill-b-start"; done
for i in 1 2; do REPLAY=1 B=2 $R "moveb.mjs calloff-b-start"; done
for i in 1 2; do REPLAY=1 KILL_DELAY_MS=100 $R "31c:move-b-down"; done
for i in 1 2; do REPLAY=1 A=2 $R "moveb.mjs a-down-nomove"; done
for i in 1 2; do $R "moveb.mjs slave-nomove"; done
