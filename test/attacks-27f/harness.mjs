// The outside checks of issue 27 (sixth round, atk27f) share the attacks harness (real broker processes, etcd, clients from dist/)
export * from '../attacks/harness.mjs';
