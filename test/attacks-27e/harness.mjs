// The outside checks of issue 27 (fifth round, atk27e) share the attacks harness (real broker processes, etcd, clients from dist/)
export * from '../attacks/harness.mjs';
