/**
 * Load for the fault tests: many keep-alive connections POSTing /hooks/wake and
 * /hooks/agent (deliver:false) in turn, recording every acknowledged id. A
 * request counts as acknowledged only when its whole 2xx answer was read.
 */
import { Agent, request } from 'node:http';
import { HOOK_TOKEN } from '../../helpers/gateway.js';

export interface Acknowledged {
  kind: 'wake' | 'agent';
  id: string;
}

export interface PostResult {
  status: number;
  body: string;
}

/** One POST over `agent`; rejects on any transport error (reset, refused, cut answer). */
export function post(
  agent: Agent,
  url: string,
  path: string,
  body: string,
  headers = {},
): Promise<PostResult> {
  const target = new URL(path, url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: {
          authorization: `Bearer ${HOOK_TOKEN}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
        res.on('aborted', () => reject(new Error('answer cut off')));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The i-th request of a load: even numbers wake, odd numbers start an agent run. */
export function loadRequest(
  tag: string,
  i: number,
): { kind: Acknowledged['kind']; path: string; body: string } {
  if (i % 2 === 0) {
    return {
      kind: 'wake',
      path: '/hooks/wake',
      body: JSON.stringify({ text: `${tag} wake ${i}`, mode: 'next-heartbeat' }),
    };
  }
  return {
    kind: 'agent',
    path: '/hooks/agent',
    body: JSON.stringify({ message: `${tag} agent ${i}`, deliver: false, wakeMode: 'next-heartbeat' }),
  };
}

export interface LoadRun {
  acknowledged: Acknowledged[];
  /** Answers that were not 2xx, by status. */
  refused: Map<number, number>;
  /** Requests that failed in transport (the gateway went away under them). */
  transportErrors: number;
  /** Resolves once every connection has stopped. */
  done: Promise<void>;
  stop(): void;
  /** Resolves once at least `count` requests were acknowledged. */
  reached(count: number): Promise<void>;
}

/**
 * Starts `connections` request loops; a loop stops after its first transport
 * error (the gateway is gone) or when `stop()` is called.
 */
export function startLoad(url: string, tag: string, connections: number): LoadRun {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const acknowledged: Acknowledged[] = [];
  const refused = new Map<number, number>();
  let transportErrors = 0;
  let stopped = false;
  let next = 0;
  const waiters: { count: number; resolve: () => void }[] = [];
  const notify = () => {
    for (const waiter of [...waiters]) {
      if (acknowledged.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };

  const loop = async () => {
    while (!stopped) {
      const i = next++;
      const { kind, path, body } = loadRequest(tag, i);
      let answer: PostResult;
      try {
        answer = await post(agent, url, path, body);
      } catch {
        transportErrors++;
        return;
      }
      if (answer.status === 200 || answer.status === 202) {
        const parsed = JSON.parse(answer.body) as { eventId?: string; runId?: string };
        const id = kind === 'wake' ? parsed.eventId : parsed.runId;
        if (typeof id !== 'string') throw new Error(`2xx without an id: ${answer.body}`);
        acknowledged.push({ kind, id });
        notify();
      } else {
        refused.set(answer.status, (refused.get(answer.status) ?? 0) + 1);
      }
    }
  };

  const done = Promise.all(Array.from({ length: connections }, loop)).then(() => {
    agent.destroy();
    for (const waiter of waiters.splice(0)) waiter.resolve();
  });
  return {
    acknowledged,
    refused,
    get transportErrors() {
      return transportErrors;
    },
    done,
    stop() {
      stopped = true;
    },
    reached(count) {
      if (acknowledged.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
  };
}

/** The ids of `acknowledged` missing from the store. */
export function missingFrom(
  acknowledged: readonly Acknowledged[],
  stored: { events: Set<string>; runs: Set<string> },
): Acknowledged[] {
  return acknowledged.filter((a) => !(a.kind === 'wake' ? stored.events : stored.runs).has(a.id));
}
