#!/bin/bash
# logstat.sh [dir...]: per run's broker logs (/tmp/atk27h/logs/NAME): elections, self-fences, "history made whole" counts,
# catch-ups sent, held-copies waits past 5 s
cd /tmp/atk27h/logs
for d in ${@:-*}; do
  c() { cat $d/*.log 2>/dev/null | grep -c "$1"; }
  w=$(cat $d/*.log 2>/dev/null | grep 'history made whole' | grep -o '"written":[0-9]*,"unanswered":[0-9]*' | sed 's/"written"://;s/,"unanswered":/\//' | tr '\n' ' ')
  echo "$d elected=$(c 'elected master through') fenced=$(c 'no longer the elected') madeWhole(written/unanswered)=[$w] catchUpsSent=$(c 'history catch-up sent') whereArrived=$(c 'written where they arrived') noLongerWait=$(c 'no longer wait')"
done
