import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { renderPrompt } from '../../../src/agents/providers/command/client.js';
import { createProvider } from '../../../src/agents/providers/index.js';
import { type CompletionRequest, ProviderError } from '../../../src/agents/providers/types.js';
import { sleep, waitFor } from '../../helpers/wait.js';

const fixtures = join(import.meta.dirname, '../../fixtures');
const node = process.execPath;
const scratch = mkdtempSync(join(tmpdir(), 'agentgate-command-'));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function provider(command: string[], extra: { cwd?: string; env?: Record<string, string> } = {}) {
  return createProvider('local', { api: 'command', command, ...extra });
}

function request(overrides: Partial<CompletionRequest> = {}): CompletionRequest {
  return {
    model: 'default',
    messages: [{ role: 'user', content: 'hello' }],
    signal: new AbortController().signal,
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

/** Running, as opposed to gone or a zombie (an orphan waits for PID 1 to reap it, which in a container can be slow). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return process.platform !== 'linux';
  }
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8'));
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

describe('renderPrompt', () => {
  it('renders the system prompt, then the turns, the new user turn last', () => {
    expect(
      renderPrompt('Be brief.\nAlways.', [
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'two' },
        { role: 'user', content: 'three' },
      ]),
    ).toBe('System:\nBe brief.\nAlways.\n\nUser: one\n\nAssistant: two\n\nUser: three\n');
  });

  it('leaves the system block out when there is none', () => {
    expect(renderPrompt(undefined, [{ role: 'user', content: 'hi' }])).toBe('User: hi\n');
  });
});

describe('command provider', () => {
  it('writes the prompt to stdin and returns stdout, trimmed', async () => {
    const result = await provider([node, join(fixtures, 'agent-echo.mjs'), '--flag', 'two words']).complete(
      request({
        system: 'Be brief.',
        messages: [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: 'two' },
          { role: 'user', content: 'three' },
        ],
      }),
    );
    expect(result.text).toBe(result.text.trim());
    const seen = JSON.parse(result.text);
    expect(seen.prompt).toBe('System:\nBe brief.\n\nUser: one\n\nAssistant: two\n\nUser: three\n');
    // argv is passed as-is, without a shell splitting or interpreting it.
    expect(seen.argv).toEqual(['--flag', 'two words']);
  });

  it('runs in the configured cwd with the configured env over the gateway env', async () => {
    const result = await provider([node, join(fixtures, 'agent-echo.mjs')], {
      cwd: scratch,
      env: { AGENT_GREETING: 'hola' },
    }).complete(request());
    const seen = JSON.parse(result.text);
    expect(seen.cwd).toBe(scratch);
    expect(seen.greeting).toBe('hola');
  });

  it('never hands the prompt to a shell', async () => {
    const marker = join(scratch, 'pwned');
    const result = await provider([node, join(fixtures, 'agent-echo.mjs')]).complete(
      request({ messages: [{ role: 'user', content: `$(touch ${marker}); \`touch ${marker}\`` }] }),
    );
    expect(JSON.parse(result.text).prompt).toContain('$(touch');
    expect(() => readFileSync(marker)).toThrow();
  });

  it('reports a non-zero exit with the stderr tail, not stdout', async () => {
    const error = await failure(provider([node, join(fixtures, 'agent-fail.mjs')]).complete(request()));
    expect(error.message).toBe(
      `command "${node}" exited with code 3: loading model...\nerror: model "nope" not found`,
    );
  });

  it('keeps only the last 4 KB of stderr', async () => {
    const script = "process.stderr.write('x'.repeat(10000) + 'THE END'); process.exit(1)";
    const error = await failure(provider([node, '-e', script]).complete(request()));
    expect(error.message).toMatch(/THE END$/);
    expect(error.message.length).toBeLessThan(4096 + 100);
  });

  it('reports a process that prints nothing as "returned no text"', async () => {
    const error = await failure(provider([node, '-e', 'process.stdin.resume()']).complete(request()));
    expect(error.message).toBe(`command "${node}" returned no text (no stderr output)`);
  });

  it('names the program when it does not exist', async () => {
    const error = await failure(provider(['agentgate-no-such-program-xyz', '--x']).complete(request()));
    expect(error.message).toBe(
      'command "agentgate-no-such-program-xyz" could not be started: program not found (ENOENT)',
    );
  });

  it('names a missing working directory instead of blaming the program', async () => {
    const missing = join(scratch, 'does-not-exist');
    const error = await failure(provider([node, '-e', ''], { cwd: missing }).complete(request()));
    expect(error.message).toBe(
      `command "${node}" could not be started: working directory "${missing}" does not exist`,
    );
  });

  it('kills the process on abort and rejects promptly with the abort reason', async () => {
    const pidFile = join(scratch, 'hang.pid');
    const controller = new AbortController();
    const pending = provider([node, join(fixtures, 'agent-hang.mjs'), pidFile]).complete(
      request({ signal: controller.signal }),
    );
    await waitFor(() => readPid(pidFile) !== undefined, 'the pid file', 5000);
    const pid = readPid(pidFile) as number;
    expect(isAlive(pid)).toBe(true);

    const reason = new Error('run timed out');
    const started = Date.now();
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(1000);
    await waitFor(() => !isAlive(pid), 'the process to end', 2000);
  });

  it('escalates to SIGKILL when the process ignores SIGTERM', async () => {
    const pidFile = join(scratch, 'stubborn.pid');
    const controller = new AbortController();
    const pending = provider([node, join(fixtures, 'agent-hang.mjs'), pidFile, '--ignore-sigterm']).complete(
      request({ signal: controller.signal }),
    );
    await waitFor(() => readPid(pidFile) !== undefined, 'the pid file', 5000);
    const pid = readPid(pidFile) as number;
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await sleep(500);
    expect(isAlive(pid)).toBe(true); // still in its SIGTERM grace period
    await waitFor(() => !isAlive(pid), 'the process to end', 4000);
  });

  it('kills what the process itself spawned, too', async () => {
    const pidFile = join(scratch, 'grandchild.pid');
    const script = `require('node:child_process').spawn(process.execPath, [${JSON.stringify(
      join(fixtures, 'agent-hang.mjs'),
    )}, ${JSON.stringify(pidFile)}], { stdio: 'ignore' }); setInterval(() => {}, 60000);`;
    const controller = new AbortController();
    const pending = provider([node, '-e', script]).complete(request({ signal: controller.signal }));
    await waitFor(() => readPid(pidFile) !== undefined, 'the pid file', 5000);
    const grandchild = readPid(pidFile) as number;
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await waitFor(() => !isAlive(grandchild), 'the grandchild to end', 4000);
  });

  it('does not start the process for an already-aborted signal', async () => {
    const pidFile = join(scratch, 'never.pid');
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    await expect(
      provider([node, join(fixtures, 'agent-hang.mjs'), pidFile]).complete(
        request({ signal: controller.signal }),
      ),
    ).rejects.toThrow('stopped');
    // A check that nothing happens: a process started anyway would write its pid file as its
    // first act (the tests above wait for that); none appears within 200 ms.
    await sleep(200);
    expect(readPid(pidFile)).toBeUndefined();
  });

  it('stops a process that floods stdout', async () => {
    const script = "const b = Buffer.alloc(65536, 'a'); const w = () => process.stdout.write(b, w); w();";
    const error = await failure(provider([node, '-e', script]).complete(request()));
    expect(error.message).toBe(`command "${node}" wrote more than 1048576 bytes to stdout`);
  });
});
