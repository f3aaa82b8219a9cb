// The attacks of issue 28 share one harness (real broker processes, etcd, clients from dist/)
export * from '../attacks/harness.mjs';
