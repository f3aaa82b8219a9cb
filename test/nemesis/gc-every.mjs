// Loaded into each broker of the nemesis (node --expose-gc --import): a full GC every 2 s, so
// that the lowest nodejs_heap_size_used_bytes of a few seconds in /metrics is the heap after GC
// (V8 alone may run no full GC for minutes; old garbage then looks like growth).
setInterval(() => globalThis.gc?.(), 2000).unref();
