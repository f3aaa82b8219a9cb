/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27): Node 20 global fetch, best-effort cleanup, figures kept for reading */
// loaded with node --expose-gc --import: a full GC every 2 s so heap_used floors show retained memory only
if (typeof globalThis.gc === 'function') setInterval(() => globalThis.gc(), 2000).unref();
