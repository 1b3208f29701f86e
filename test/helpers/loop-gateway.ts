/**
 * A gateway started through the real CLI for end-to-end tests, with a fake
 * OpenAI-compatible provider and fake messaging platforms configured.
 */
import { rmSync } from 'node:fs';
import type { FakeOpenAi } from '../fakes/openai.js';
import { type RunningCli, startCli } from './cli.js';
import { ADMIN_TOKEN, HOOK_TOKEN, tempDir, withTestStore, writeConfig } from './gateway.js';
import { waitFor } from './wait.js';

export const MAIN = 'agent:main:main';

// biome-ignore lint/suspicious/noExplicitAny: answers are JSON whose fields each test asserts itself
export type Json = any;

export class Gateway {
  private cli?: RunningCli;
  readonly dir = tempDir('agentgate-loop-');
  private configPath = '';

  constructor(
    private readonly llm: FakeOpenAi,
    /** The `channels` section (fakes' URLs). */
    private readonly channels: Record<string, unknown>,
    private readonly extra: Record<string, unknown> = {},
  ) {}

  async start(): Promise<this> {
    this.configPath = writeConfig(
      this.dir,
      withTestStore({
        hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
        models: { providers: { fake: { api: 'openai-chat', baseUrl: this.llm.baseUrl, apiKey: 'sk-test' } } },
        agents: {
          defaults: { model: 'fake/gpt-test', heartbeat: { every: '0' }, ...(this.extra.defaults as object) },
        },
        channels: this.channels,
      }),
    );
    this.cli = await startCli(['--config', this.configPath, '--port', '0']);
    return this;
  }

  /** Stops the process with `signal` and starts another; answers how long the old one took to exit. */
  async restart(signal: NodeJS.Signals = 'SIGKILL'): Promise<{ exitedAfterMs: number }> {
    const stopping = Date.now();
    await this.cli?.kill(signal);
    const exitedAfterMs = Date.now() - stopping;
    this.cli = await startCli(['--config', this.configPath, '--port', '0']);
    return { exitedAfterMs };
  }

  async stop(): Promise<void> {
    await this.cli?.kill('SIGTERM');
    rmSync(this.dir, { recursive: true, force: true });
  }

  async hook(name: string, body: unknown): Promise<{ status: number; body: Json }> {
    const response = await fetch(`${this.cli?.url}/hooks/${name}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${HOOK_TOKEN}` },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  }

  async admin(path: string): Promise<Json> {
    const response = await fetch(`${this.cli?.url}${path}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    return response.json();
  }

  run(runId: string): Promise<Json> {
    return this.admin(`/api/runs/${runId}`);
  }

  /** Waits until the run has finished and its delivery is no longer pending. */
  settled(runId: string): Promise<Json> {
    return waitFor(async () => {
      const run = await this.run(runId);
      const done =
        ['succeeded', 'failed', 'timed_out'].includes(run.status) && run.delivery.status !== 'pending';
      return done ? run : undefined;
    }, `run ${runId} to settle`);
  }

  async events(sessionKey = MAIN): Promise<Json[]> {
    return (await this.admin(`/api/sessions/${encodeURIComponent(sessionKey)}/events`)).events;
  }
}
