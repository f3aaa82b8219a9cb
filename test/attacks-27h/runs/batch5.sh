#!/bin/bash
# batch 5 (after batch 4): each kept nemesis directory (copied to /tmp/atk27h/nem/NAME) replayed broker by broker, alone
# (test/attacks-27g/forensic-nemesis-replays.mjs): every mirror's history against the answered sends and the final replay
cd /work/wt-atk27h
while kill -0 $(cat /tmp/atk27h/batch4.pid) 2>/dev/null; do sleep 5; done
d=$(grep -o 'data in /tmp/whisker-nemesis-[A-Za-z0-9]*' test/attacks-27h/runs/n27-4.out | sed 's/data in //'); [ -n "$d" ] && cp -a $d /tmp/atk27h/nem/n27-4
for n in n27-1 n27-2 n27-3 n5 n2027 n27-4; do
  { echo "# forensic $n $(date -u +%T) $(uptime | sed 's/.*load/load/')"; nice -n 5 timeout 600 node test/attacks-27g/forensic-nemesis-replays.mjs /tmp/atk27h/nem/$n /tmp/atk27h/nem/$n/recorded.json 2>&1; } > test/attacks-27h/runs/forensic-$n.out
done
