#!/bin/bash
# One table row per run log of test/attacks-27k/logs (or the logs given): env, commit, verdict, figures, load at start/end, lease losses (brokers' 'not delivering: ... lease could not be renewed' lines, all four brokers).
cd "$(dirname "$0")/../.."
for f in ${@:-test/attacks-27k/logs/*.log}; do
  node -e '
const fs = require("fs"); const f = process.argv[1]; const t = fs.readFileSync(f, "utf8");
const head = t.split("\n")[0]; const stops = /B_STOPS=([^;]+);/.exec(head)?.[1];
const env = [...(/env (.*?);/.exec(head)[1].replace(/ B_STOPS=.*/, "").split(" ").filter((kv) => /=./.test(kv))), ...(stops ? [`B_STOPS="${stops}"`] : [])].join(" ") || "-";
const commit = /; ([0-9a-f]{7}) /.exec(head)?.[1] ?? "?";
const l0 = /load average: ([\d.]+)/.exec(head)?.[1]; const endLine = t.split("\n").find((l) => l.startsWith("== rc")) ?? ""; const l1 = /load average: ([\d.]+)/.exec(endLine)?.[1];
const res = JSON.parse(t.split("\n").find((l) => l.startsWith("{\"mode\"")) ?? "null");
const rep = /^replay: (.*)$/m.exec(t); const r = rep ? JSON.parse(rep[1]) : null;
const verdict = /^(HELD|BROKEN.*)$/m.exec(t)?.[1] ?? "none";
const base = f.split("/").pop().replace(".log", ""); const dir = require("path").dirname(f) + "/brokers";
let flaps = 0; for (const g of fs.existsSync(dir) ? fs.readdirSync(dir).filter((x) => x.startsWith(base + "-") && /-[ab]\d\.log\.gz$/.test(x)) : []) flaps += (require("zlib").gunzipSync(fs.readFileSync(dir + "/" + g)).toString().match(/"reason":"the lease could not be renewed in time","epoch":\d+,"msg":"not delivering/g) ?? []).length;
const c = res?.consumer, li = res?.listener;
console.log(`| ${f.split("/").pop().replace(".log","")} | ${env} | ${commit} | ${verdict.startsWith("HELD") ? "HELD" : "**BROKEN**"} | ${res?.answeredOk ?? "?"} | ${c ? `${c.lost}/${c.dups}/${c.orderBreaks}` : "?"} | ${li ? `${li.lost}/${li.dups}/${li.orderBreaks}` : "?"} | ${r ? `${r.count}/${r.unique}/${r.dups}/${r.breaks}/${r.missing}` : "-"} | ${res?.moves?.map((m) => `exit ${m.code} ${m.ms} ms`).join(", ")} | ${l0}-${l1} | ${flaps} |`);
' "$f"
done
