// The atk27f scripts reuse atk27e's shared pieces (pipelining producers, listener, consumer, replays, order/loss checks)
export * from '../attacks-27e/common.mjs';
