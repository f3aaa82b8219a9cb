#!/bin/bash
# One line per log: verdict, answered, consumer/listener lost/dups/breaks, replay, move exit, what b reloaded / sentMeanwhile
cd "$(dirname "$0")/logs"
for f in ${@:-*.log}; do
  j=$(grep -E '^\{"mode' "$f" | head -1)
  v=$(grep -E '^(HELD|BROKEN)' "$f" | head -1 | cut -c1-160)
  echo "$f | $(echo "$j" | grep -o '"answeredOk":[0-9]*' ) | C $(echo "$j" | grep -o '"consumer":{[^}]*}' | grep -o '"\(lost\|dups\|orderBreaks\)":[0-9]*' | cut -d: -f2 | tr '\n' '/') L $(echo "$j" | grep -o '"listener":{[^}]*}' | grep -o '"\(lost\|dups\|orderBreaks\)":[0-9]*' | cut -d: -f2 | tr '\n' '/') | $(grep -E '^replay' "$f" | grep -o '"\(count\|dups\|breaks\|missing\)":[0-9]*' | tr '\n' ' ') | move $(echo "$j" | grep -o '"code":[0-9]*,"ms":[0-9]*' | head -2 | tr '\n' ' ') | $(grep -o 'b[12] store replayed "messages":[0-9]*\|"sentMeanwhile":[0-9]*\|"restored":[0-9]*\|"dropped":[0-9]*' "$f" | tr '\n' ' ' | cut -c1-200) | $v"
done
