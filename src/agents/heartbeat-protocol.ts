/**
 * The heartbeat protocol (providers/kit/heartbeat-protocol.ts), for the scheduler and the
 * worker: it sits with the providers so that echo, which answers it, imports nothing above them.
 */
export * from './providers/kit/heartbeat-protocol.js';
