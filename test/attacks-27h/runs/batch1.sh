#!/bin/bash
# batch 1: g2 retained kill -9, BURST=2 GAP=2 P=4 x8 then plain x2, one at a time
cd /work/wt-atk27h
R=test/attacks-27h/runs/r.sh
for i in 1 2 3 4 5 6 7 8; do $R g2-b-$i test/attacks-27h/g2-retained-kill.mjs BURST=2 GAP=2 P=4; done
for i in 1 2; do $R g2-plain-$i test/attacks-27h/g2-retained-kill.mjs; done
