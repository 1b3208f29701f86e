/**
 * What the run worker's and heartbeat scheduler's unit tests drive them with:
 * the real SQLite store in a temp dir, the loopback OpenAI fake over real HTTP
 * whose replies the test holds and releases one by one, a manual clock, and
 * the config loaded the way the CLI loads it.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { ModelRouter } from '../../src/agents/models.js';
import { loadConfigFile } from '../../src/config/load.js';
import type { ResolvedConfig } from '../../src/config/resolved.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { NewEvent, NewRun } from '../../src/store/types.js';
import {
  type FakeOpenAi,
  type FakeOpenAiReply,
  type OpenAiChatBody,
  startFakeOpenAi,
} from '../fakes/openai.js';
import { tempDir, writeConfig } from './gateway.js';
import { ManualClock } from './manual-clock.js';
import { waitFor } from './wait.js';

export const silentLog = pino({ level: 'silent' });
/** No retries of provider errors: the tests that fail a turn want it to fail at once. */
export const NO_RETRY = { maxCalls: 1, baseDelayMs: 1, maxDelayMs: 1 };

/** A provider call the fake is holding: the test answers it when it chooses. */
export interface HeldCall {
  body: OpenAiChatBody;
  /** The last message's text (the run's message arrives wrapped as untrusted). */
  text: string;
  answer(reply: FakeOpenAiReply): void;
}

/** The fake provider, holding every call until the test answers it. */
export class HeldProvider {
  readonly calls: HeldCall[] = [];
  inFlight = 0;
  maxInFlight = 0;
  private constructor(readonly fake: FakeOpenAi) {}

  static async start(): Promise<HeldProvider> {
    const fake = await startFakeOpenAi({ apiKey: 'sk-test' });
    const held = new HeldProvider(fake);
    fake.setReply(
      (body) =>
        new Promise<FakeOpenAiReply>((resolve) => {
          held.inFlight++;
          held.maxInFlight = Math.max(held.maxInFlight, held.inFlight);
          const last = body.messages.at(-1)?.content;
          held.calls.push({
            body,
            text: typeof last === 'string' ? last : JSON.stringify(last),
            answer: (reply) => {
              held.inFlight--;
              resolve(reply);
            },
          });
        }),
    );
    return held;
  }

  /** Waits until the fake has received `count` calls in all; returns the newest. */
  async received(count: number): Promise<HeldCall> {
    await waitFor(() => this.calls.length >= count, `provider call ${count}`, 5000, 5);
    return this.calls[count - 1] as HeldCall;
  }

  /** Answers whatever is still held (so the fake can close), then closes it. */
  async close(): Promise<void> {
    for (const call of this.calls) call.answer('late');
    await this.fake.close();
  }
}

export interface Rig {
  dir: string;
  config: ResolvedConfig;
  store: SqliteStore;
  models: ModelRouter;
  clock: ManualClock;
  close(): Promise<void>;
}

/** A fresh store and config (models at `baseUrl`, merged with `override`) on a manual clock. */
export function rig(baseUrl: string, override: Record<string, unknown> = {}): Rig {
  const dir = tempDir('agentgate-rig-');
  const configDir = join(dir, 'config');
  mkdirSync(configDir);
  const defaults = (override.defaults ?? {}) as Record<string, unknown>;
  const path = writeConfig(configDir, {
    models: { providers: { fake: { api: 'openai-chat', baseUrl, apiKey: 'sk-test' } } },
    agents: { defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' }, ...defaults } },
  });
  const loaded = loadConfigFile(path, process.env);
  if (!loaded.ok) throw new Error(loaded.problems.join('\n'));
  // No WAL sync per commit: what a turn does is tested here, not durability (gateway.ts, withTestStore);
  // no checkpointer thread either (gateway.ts, withoutCheckpointThread).
  const store = new SqliteStore({
    path: join(dir, `${randomUUID()}.db`),
    synchronous: 'normal',
    checkpointThread: false,
  });
  return {
    dir,
    config: loaded.config,
    store,
    models: new ModelRouter(loaded.config),
    clock: new ManualClock(),
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let seq = 0;
const render = () => ({ status: 202, body: '{}' });

/** Queues an agent run (defaults: its own session key, 60 s timeout, no delivery). */
export async function queueRun(store: SqliteStore, fields: Partial<NewRun> = {}): Promise<NewRun> {
  seq++;
  const run: NewRun = {
    id: `run_${String(seq).padStart(6, '0')}`,
    agentId: 'main',
    sessionKey: `hook:s${seq}`,
    mainSessionKey: 'agent:main:main',
    name: null,
    message: `message ${seq}`,
    model: null,
    thinking: null,
    timeoutSeconds: 60,
    wakeMode: 'next-heartbeat',
    deliver: false,
    channel: 'last',
    to: null,
    allowUnsafeExternalContent: true,
    source: 'hook:agent',
    createdAt: seq,
    ...fields,
  };
  await store.accept([{ kind: 'agent', run }], render);
  return run;
}

/** Queues a system event for the main session (what `/hooks/wake` commits). */
export async function queueEvent(store: SqliteStore, text: string, fields: Partial<NewEvent> = {}) {
  seq++;
  const event: NewEvent = {
    id: `evt_${String(seq).padStart(6, '0')}`,
    sessionKey: 'agent:main:main',
    text,
    source: 'hook:wake',
    wakeMode: 'next-heartbeat',
    ts: seq,
    ...fields,
  };
  await store.accept([{ kind: 'wake', event }], render);
  return event;
}
