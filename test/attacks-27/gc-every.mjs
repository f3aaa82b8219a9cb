// loaded with node --expose-gc --import: a full GC every 2 s so heap_used floors show retained memory only
if (typeof globalThis.gc === 'function') setInterval(() => globalThis.gc(), 2000).unref();
