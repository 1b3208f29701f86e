/**
 * Config reloads under writes that never pause (src/config/reload.ts; docs/configuration.md,
 * "Reload"): the real watcher on a real file, with short settings — a reload at the latest
 * the maximum wait after the first change not yet reloaded, not one reload at the very end,
 * and never two reloads at once.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { watchConfigFile } from '../../src/config/reload.js';
import { createLogger } from '../../src/log.js';
import { tempDir, writeConfig } from '../helpers/gateway.js';
import { sleep, waitFor } from '../helpers/wait.js';

let dir: string | undefined;
let stop: (() => void) | undefined;
afterEach(() => {
  stop?.();
  stop = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('config reload', () => {
  it('reloads during continuous writes, at most the maximum wait apart, one reload at a time', async () => {
    dir = tempDir('agentgate-reload-');
    const path = writeConfig(dir);
    const reloadedAt: number[] = [];
    let running = 0;
    let overlapped = false;
    stop = watchConfigFile(
      path,
      async () => {
        running++;
        if (running > 1) overlapped = true;
        reloadedAt.push(performance.now());
        // A reload that takes a while: changes keep coming meanwhile.
        await sleep(60);
        running--;
      },
      createLogger('silent'),
      { times: { quietMs: 100, maxWaitMs: 300 } },
    );
    const started = performance.now();
    const text = JSON.stringify(JSON.parse(readFileSync(path, 'utf8')), null, 2);
    // A write every 20 ms for 1.5 s: never 100 ms of quiet.
    for (let i = 0; performance.now() - started < 1_500; i++) {
      writeFileSync(path, `${text}\n// write ${i}\n`);
      await sleep(20);
    }
    const writesEnded = performance.now();
    const during = reloadedAt.filter((at) => at < writesEnded).length;
    // With only a quiet period, none at all until the writes stop.
    expect(during).toBeGreaterThanOrEqual(3);
    // And once more after the last write.
    await waitFor(() => reloadedAt.some((at) => at > writesEnded), 'the reload after the last write', 3_000);
    expect(overlapped).toBe(false);
  });
});
