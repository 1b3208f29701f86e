/**
 * A gateway started through the real CLI for end-to-end tests, with a fake
 * OpenAI-compatible provider and fake messaging platforms configured: the bin
 * in a child process, which a test can kill and restart, or (`inProcess`) the
 * same `agentgate run` in the test's process, for cases that need no kill
 * (test/helpers/cli-in-process.ts).
 */
import { rmSync } from 'node:fs';
import type { FakeOpenAi } from '../fakes/openai.js';
import { type RunningCli, startCli } from './cli.js';
import { type InProcessCli, startCliInProcess } from './cli-in-process.js';
import { ADMIN_TOKEN, HOOK_TOKEN, tempDir, withTestStore, writeConfig } from './gateway.js';
import { waitFor } from './wait.js';

export const MAIN = 'agent:main:main';

// biome-ignore lint/suspicious/noExplicitAny: answers are JSON whose fields each test asserts itself
export type Json = any;

export class Gateway {
  private cli?: RunningCli | InProcessCli;
  readonly dir = tempDir('agentgate-loop-');
  private configPath = '';

  constructor(
    private readonly llm: FakeOpenAi,
    /** The `channels` section (fakes' URLs). */
    private readonly channels: Record<string, unknown>,
    private readonly extra: Record<string, unknown> = {},
  ) {}

  async start(options: { inProcess?: boolean } = {}): Promise<this> {
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
    const args = ['--config', this.configPath, '--port', '0'];
    this.cli = options.inProcess ? await startCliInProcess(args) : await startCli(args);
    return this;
  }

  /** Stops the process with `signal` and starts another; answers how long the old one took to exit. */
  async restart(signal: NodeJS.Signals = 'SIGKILL'): Promise<{ exitedAfterMs: number }> {
    if (!this.cli || !('kill' in this.cli)) throw new Error('only a gateway in a child process restarts');
    const stopping = Date.now();
    await this.cli.kill(signal);
    const exitedAfterMs = Date.now() - stopping;
    this.cli = await startCli(['--config', this.configPath, '--port', '0']);
    return { exitedAfterMs };
  }

  async stop(): Promise<void> {
    if (this.cli && 'kill' in this.cli) await this.cli.kill('SIGTERM');
    else await this.cli?.stop();
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
