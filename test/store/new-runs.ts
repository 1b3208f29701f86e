/**
 * The run the store conformance files accept, written once: an agent run of the main agent in
 * a session of its own, not delivered, created at `createdAt`; each file names its own ids
 * (`tag`) so two files' runs never share a key in a shared PostgreSQL database.
 */
import type { NewRun } from '../../src/store/types.js';

export function newRunFactory(
  tag: string,
  createdAt: number,
): {
  nextId: (prefix: string) => string;
  newRun: (overrides?: Partial<NewRun>) => NewRun;
} {
  let counter = 0;
  const nextId = (prefix: string) => `${prefix}_${tag}${String(++counter).padStart(6, '0')}`;
  const newRun = (overrides: Partial<NewRun> = {}): NewRun => ({
    id: nextId('run'),
    agentId: 'main',
    sessionKey: nextId(`hook:${tag}`),
    mainSessionKey: 'agent:main:main',
    name: null,
    message: 'm',
    model: null,
    thinking: null,
    timeoutSeconds: 600,
    wakeMode: 'next-heartbeat',
    deliver: false,
    channel: 'last',
    to: null,
    allowUnsafeExternalContent: false,
    source: 'hook:agent',
    createdAt,
    ...overrides,
  });
  return { nextId, newRun };
}
