// The outside checks of issue 27 (third round) share the attacks harness (real broker processes, etcd, clients from dist/)
export * from '../attacks/harness.mjs';
