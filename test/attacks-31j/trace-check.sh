#!/bin/bash
# (atk31j) per b broker log with the trace of trace-patch.py: the history writes of mv/v1 before its adopt, and the adopt
# per b broker log: history writes of mv/v1 to the channel before its adopt (TRACE lines)
for f in "$@"; do
  echo "== $f"
  awk '/TRACE history adopt/{adopt=1; print "   adopt:", substr($0, 1, 200)} /TRACE history (write|holdAgain|catchUpWrite)/ && /mv\/v1/ && !adopt {n++; if (n<=6) print "   pre-adopt:", substr($0, 1, 520)} END{print "   pre-adopt writes:", n+0}' "$f"
done
