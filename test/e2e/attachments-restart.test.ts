/**
 * "A 202 means the bytes are durable" for attachments (docs/attachments.md), through
 * the real CLI: the gateway is killed with SIGKILL right after answering 202, before
 * the model has answered (its call, if it was made at all, is held); after a restart
 * the run is taken up again and the model is given the very same bytes.
 */
import { rmSync } from 'node:fs';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { type FakeOpenAi, type FakeOpenAiReply, startFakeOpenAi } from '../fakes/openai.js';
import { type RunningCli, startCli } from '../helpers/cli.js';
import { ADMIN_TOKEN, HOOK_TOKEN, readAnswer, tempDir, writeConfig } from '../helpers/gateway.js';
import { waitFor } from '../helpers/wait.js';

let dir: string;
let running: RunningCli[] = [];
let fake: FakeOpenAi;
/** Calls the first process made: never answered until the test ends. */
const held: ((reply: FakeOpenAiReply) => void)[] = [];
let holding = true;

beforeEach(async () => {
  dir = tempDir('agentgate-attachments-restart-');
  fake = await startFakeOpenAi({
    apiKey: 'sk-test',
    reply: () => (holding ? new Promise<FakeOpenAiReply>((resolve) => held.push(resolve)) : 'got the files'),
  });
});

afterEach(async () => {
  for (const cli of running) {
    if (cli.child.exitCode === null && cli.child.signalCode === null) await cli.kill('SIGKILL');
  }
  running = [];
  for (const answer of held) answer('late');
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

it('a run killed between its 202 and the model’s answer gives the model the same bytes after a restart', async () => {
  const file = writeConfig(dir, {
    hooks: { maxBodyBytes: 4 * 1024 * 1024 },
    models: { providers: { fake: { api: 'openai-chat', baseUrl: fake.baseUrl, apiKey: 'sk-test' } } },
    agents: { defaults: { model: 'fake/gpt-test' } },
  });
  const start = async () => {
    const cli = await startCli(['--config', file, '--port', '0'], {
      AGENTGATE_CONFIG: '',
      AGENTGATE_HOME: '',
    });
    running.push(cli);
    return cli;
  };
  const png = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < png.length; i++) png[i] = (i * 31 + 7) % 256;
  const pdf = Buffer.from(`%PDF-1.4\n${'x'.repeat(300_000)}\n%%EOF\n`);

  const first = await start();
  const answer = await fetch(`${first.url}/hooks/agent`, {
    method: 'POST',
    headers: { authorization: `Bearer ${HOOK_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      message: 'read these',
      deliver: false,
      attachments: [
        { name: 'big.png', mediaType: 'image/png', data: png.toString('base64') },
        { name: 'doc.pdf', mediaType: 'application/pdf', data: pdf.toString('base64') },
      ],
    }),
  }).then(readAnswer);
  expect(answer.status, answer.text).toBe(202);
  await first.kill('SIGKILL');
  const callsBefore = fake.requests.length;

  holding = false;
  const second = await start();
  const runId = answer.body.runId as string;
  let view: { status: string; attachments: unknown; error: string | null } | undefined;
  await waitFor(
    async () => {
      const got = await fetch(`${second.url}/api/runs/${runId}`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      }).then(readAnswer);
      view = got.body;
      return view?.status === 'succeeded' || view?.status === 'failed';
    },
    'the run finished after the restart',
    15_000,
  );
  expect(view?.status, view?.error ?? '').toBe('succeeded');
  expect(view?.attachments).toEqual([
    { name: 'big.png', mediaType: 'image/png', bytes: png.length },
    { name: 'doc.pdf', mediaType: 'application/pdf', bytes: pdf.length },
  ]);

  const after = fake.requests.slice(callsBefore);
  expect(after).toHaveLength(1);
  const content = after[0]?.body.messages.at(-1)?.content as {
    type: string;
    image_url?: { url: string };
    file?: { filename: string; file_data: string };
  }[];
  expect(content.map((part) => part.type)).toEqual(['text', 'image_url', 'file']);
  const image = content[1]?.image_url?.url as string;
  expect(image.startsWith('data:image/png;base64,')).toBe(true);
  expect(Buffer.from(image.slice('data:image/png;base64,'.length), 'base64').equals(png)).toBe(true);
  const doc = content[2]?.file?.file_data as string;
  expect(Buffer.from(doc.slice('data:application/pdf;base64,'.length), 'base64').equals(pdf)).toBe(true);
  // Any call the first process made carried the same bytes.
  for (const call of fake.requests.slice(0, callsBefore)) {
    expect(JSON.stringify(call.body.messages.at(-1)?.content)).toContain(
      png.toString('base64').slice(0, 4096),
    );
  }
}, 60_000);
