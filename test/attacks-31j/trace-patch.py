# The history trace used in atk31j (not for merging into src/): patches a built dist/broker/history/history.js
# with info lines "TRACE history ..." (writes of each queue and whether it waits for a hand-over, holdMoving,
# releaseMoving, adopt, holdAgain, catchUpWrite). Usage, in a worktree of its own after `npm run build`:
#   python3 test/attacks-31j/trace-patch.py dist/broker/history/history.js
# then test/attacks-31j/trace-check.sh on the brokers' logs lists the writes of mv/v1 before each adopt.
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace("""        const writes = [...byQueue].map(([queue, records]) => this.#channel(queue).append(records, this.#retention(queue), this.#now));""",
"""        for (const [queue, records] of byQueue) this.#log.info("TRACE history write", { queue, n: records.length, moving: this.#moving.has(queue), first: JSON.stringify(records[0].data), last: JSON.stringify(records[records.length - 1].data), outOfStep: this.#outOfStep, placing: this.#placing, stack: this.#moving.has(queue) ? new Error().stack.split("\\n").slice(2, 7).join(" < ") : undefined });
        const writes = [...byQueue].map(([queue, records]) => this.#channel(queue).append(records, this.#retention(queue), this.#now));""", 1)
s = s.replace("    holdMoving(queue) {\n", "    holdMoving(queue) {\n        this.#log.info('TRACE history holdMoving', { queue, had: this.#moving.has(queue), held: this.#held.size });\n", 1)
s = s.replace("    releaseMoving(queue) {\n", "    releaseMoving(queue) {\n        this.#log.info('TRACE history releaseMoving', { queue, n: this.#moving.get(queue)?.length, stack: new Error().stack.split('\\n').slice(2, 6).join(' < ') });\n", 1)
s = s.replace("    async adopt(queue, records, appendedNext) {\n", "    async adopt(queue, records, appendedNext) {\n        this.#log.info('TRACE history adopt', { queue, n: records.length, heldBeforeMoving: this.#heldBeforeMoving.size, outOfStep: this.#outOfStep, placing: this.#placing });\n", 1)
s = s.replace("    #holdAgain(queue, records) {\n", "    #holdAgain(queue, records) {\n        if (records.length) this.#log.info('TRACE history holdAgain', { queue, n: records.length, moving: this.#moving.has(queue), first: JSON.stringify(records[0].data), last: JSON.stringify(records[records.length - 1].data) });\n", 1)
s = s.replace("""        const writes = [...byQueue].map(([queue, records]) => this.#channels.get(queue).catchUpWrite(""", """        for (const [queue, records] of byQueue) this.#log.info("TRACE history catchUpWrite", { queue, n: records.length, first: JSON.stringify(records[0].data), last: JSON.stringify(records[records.length - 1].data) });
        const writes = [...byQueue].map(([queue, records]) => this.#channels.get(queue).catchUpWrite(""", 1)
open(p, 'w').write(s)
print(s.count('TRACE history'), 'trace lines in', p)
