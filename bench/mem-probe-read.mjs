// reads a bench/mem-probe.cjs file: the lines marked (the RSS reading and after its GC), or with --all every line
import { readFileSync } from 'node:fs';
const [file, all] = process.argv.slice(2);
const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
for (const x of lines) {
  if (all !== '--all' && !x.mark) continue;
  const other = Math.round((x.smaps.Private_Dirty - x.heapTotal - x.external) * 10) / 10;
  console.log(`${(x.t / 1000).toFixed(1)} s ${x.mark ?? ''} RSS ${x.smaps.Rss} = shared clean ${x.smaps.Shared_Clean} + private ${x.smaps.Private_Dirty} (heap committed ${x.heapTotal}: new ${x.spaces.new.join('/')}, old ${x.spaces.old.join('/')}, code ${x.spaces.code[0]}, large ${x.spaces.large_object[0]}; external ${x.external} of which array buffers ${x.ab}; other ${other}); heap used ${x.heapUsed}`);
}
