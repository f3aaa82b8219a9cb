#!/bin/bash
# 31h batch 2: F2 forced (SIGSTOP of set a's master after the hand-back), after batch 1
cd "$(dirname "$0")"
while pgrep -f "attacks-31h/batch1.sh" >/dev/null; do sleep 5; done
for i in 1 2 3; do
  REPLAY=1 A=2 ./run.sh "h:moveh.mjs calloff-a-stop"
  REPLAY=1 A=2 ./run.sh "h:moveh.mjs calloff-a-stop-early"
done
