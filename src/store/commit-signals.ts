/**
 * Which commits signal which kind of work (committed.ts), the same on every
 * driver: each store part's writing methods that can make work due are wrapped
 * so that, once the method's commit has returned, the kinds it made due are
 * emitted. The other methods pass through untouched.
 */
import type { LocalCommits } from './committed.js';
import type {
  AcceptResult,
  Action,
  AdminStore,
  CallbackOutboxStore,
  DeliveryOutboxStore,
  RunCompletion,
  RunQueueStore,
  SessionStore,
} from './types.js';

type Method = (...args: never[]) => Promise<unknown>;
type After<T> = {
  [K in keyof T]?: T[K] extends (...args: infer A) => Promise<infer R>
    ? (result: R, ...args: A) => void
    : never;
};

/** `part` with each method named in `after` followed, once it resolved, by its signals. */
function signalling<T extends object>(part: T, after: After<T>): T {
  return new Proxy(part, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      const signal = (
        after as Record<PropertyKey, ((result: unknown, ...args: unknown[]) => void) | undefined>
      )[name];
      if (!signal || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const result = await (value as Method).apply(target, args as never[]);
        signal(result, ...args);
        return result;
      };
    },
  });
}

/** A run's recorded end: its reply or alert in the outbox, its callback, its summary's wake. */
function runFinished(commits: LocalCommits, completion: RunCompletion, alert: string | undefined): void {
  if (completion.delivery.status === 'pending' || alert === 'queued') commits.emit('outbox');
  // A run with nothing to deliver has its callback due now (one waiting for a delivery is not yet).
  commits.emit('callbacks');
  if (completion.summary.wakeMode === 'now') commits.emit('events', [completion.summary.sessionKey]);
}

export function signalRuns<T extends RunQueueStore>(runs: T, commits: LocalCommits): T {
  return signalling<RunQueueStore>(runs, {
    releaseRun: (released) => released && commits.emit('runs'),
    requeueOrphans: (requeued) => requeued.length > 0 && commits.emit('runs'),
    // Its outcome does not say whether the alert was queued or suppressed: a look costs one scan.
    completeRun: (recorded, completion) =>
      recorded && runFinished(commits, completion, completion.alert ? 'queued' : undefined),
    completeAndClaim: (outcome, completion) =>
      outcome.recorded && runFinished(commits, completion, outcome.alert),
  }) as T;
}

export function signalSessions<T extends SessionStore>(sessions: T, commits: LocalCommits): T {
  return signalling<SessionStore>(sessions, {
    recordHeartbeat: (_, record) =>
      record.status === 'succeeded' && record.delivery.status === 'pending' && commits.emit('outbox'),
  }) as T;
}

export function signalOutbox<T extends DeliveryOutboxStore>(outbox: T, commits: LocalCommits): T {
  return signalling<DeliveryOutboxStore>(outbox, {
    finishDelivery: (alert, item) => {
      // A run's callback waits for its delivery to settle (docs/callers.md, "Completion callbacks").
      if (item.kind === 'run') commits.emit('callbacks');
      if (alert === 'queued') commits.emit('outbox');
    },
    summarizeAlerts: (counts) => counts !== undefined && commits.emit('outbox'),
  }) as T;
}

export function signalCallbacks<T extends CallbackOutboxStore>(callbacks: T, commits: LocalCommits): T {
  return signalling<CallbackOutboxStore>(callbacks, {
    finishCallback: (outcome) => outcome === 'queued' && commits.emit('outbox'),
  }) as T;
}

export function signalAdmin<T extends AdminStore>(admin: T, commits: LocalCommits): T {
  return signalling<AdminStore>(admin, {
    redeliverRun: (outcome) => outcome === 'enqueued' && commits.emit('outbox'),
  }) as T;
}

/** After an accept: its runs are queued, its wake-now events ask for their heartbeats. */
export function signalAccepted(
  commits: LocalCommits,
  actions: readonly Action[],
  result: AcceptResult,
): void {
  if (result.kind !== 'committed') return;
  if (actions.some((action) => action.kind === 'agent')) commits.emit('runs');
  const wakes = actions.flatMap((action) =>
    action.kind === 'wake' && action.event.wakeMode === 'now' ? [action.event.sessionKey] : [],
  );
  if (wakes.length > 0) commits.emit('events', wakes);
}
