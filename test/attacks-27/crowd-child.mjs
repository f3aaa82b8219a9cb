/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// child of a10: N clients of one name connect at once to HOST; prints one JSON line with the outcome
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
const { client } = await import(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'index.js'));
const [host, n, pem] = [process.argv[2], Number(process.argv[3]), Buffer.from(process.argv[4], 'base64').toString()];
const t0 = Date.now();
const cs = Array.from({ length: n }, () => client());
const rs = await Promise.all(cs.map((c) => { c.on('error', () => {}); return c.connect({ hosts: [host], clientId: 'crowd', privateKey: pem, connectTimeout: 10000 }).then(() => ({ ok: true, ms: Date.now() - t0 }), (e) => ({ code: `${e.code}: ${(e.message ?? '').slice(0, 50)}`, ms: Date.now() - t0 })); }));
console.log(JSON.stringify(rs));
await Promise.all(cs.map((c) => c.disconnect().catch(() => {})));
process.exit(0);
