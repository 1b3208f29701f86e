/**
 * Filters at the door (docs/mappings.md, "Filters"), through `inject()`: a request the filter
 * turns away is 200 `filtered`, stores and runs nothing (its transform is not even called),
 * and is counted; the signature is checked before the filter.
 */
import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway, tempDir } from '../helpers/gateway.js';

const SECRET = 'filter-test-github-secret';

describe('a mapping with a filter', () => {
  let gw: TestGateway;
  let dir: string;
  let marker: string;

  beforeAll(async () => {
    dir = tempDir('agentgate-filter-');
    marker = join(dir, 'transform-called');
    mkdirSync(join(dir, 'hooks', 'transforms'), { recursive: true });
    writeFileSync(
      join(dir, 'hooks', 'transforms', 'mark.mjs'),
      `import { writeFileSync } from 'node:fs';
       export default ({ payload }) => { writeFileSync(${JSON.stringify(marker)}, 'x'); return { message: 'PR ' + payload.number }; };`,
    );
    gw = await startTestGateway(
      {
        hooks: {
          mappings: [
            {
              id: 'github',
              match: { path: 'github' },
              auth: 'signature',
              verify: { kind: 'github', secret: SECRET },
              filter: {
                all: [
                  { header: 'x-github-event', equals: 'pull_request' },
                  { path: 'action', in: ['opened', 'reopened'] },
                ],
              },
              transform: { module: 'mark.mjs' },
            },
          ],
        },
      },
      { dir, inject: true },
    );
  });
  afterAll(async () => {
    await gw.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const send = (event: string, payload: unknown, secret = SECRET) => {
    const body = JSON.stringify(payload);
    return gw.request('/hooks/github', {
      method: 'POST',
      headers: {
        'x-github-event': event,
        'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
      },
      body,
    });
  };

  it('answers a request it turns away 200 filtered: nothing stored, the transform not called', async () => {
    const pushed = await send('push', { ref: 'refs/heads/main' });
    expect(pushed.status).toBe(200);
    expect(pushed.body).toEqual({ ok: true, filtered: true });
    const closed = await send('pull_request', { action: 'closed', number: 3 });
    expect(closed.body).toEqual({ ok: true, filtered: true });
    expect(existsSync(marker)).toBe(false);
    expect((await gw.admin('/api/runs')).body.runs).toEqual([]);
    const metrics = await gw.admin('/metrics');
    expect(metrics.text).toMatch(/^agentgate_hook_filtered_total\{hook="github"\} 2$/m);
  });

  it('takes what passes, through the transform', async () => {
    const opened = await send('pull_request', { action: 'opened', number: 4 });
    expect(opened.status).toBe(202);
    expect(existsSync(marker)).toBe(true);
  });

  it('checks the signature first: a forged request is 401, not filtered', async () => {
    const forged = await send('push', { ref: 'x' }, 'not the secret');
    expect(forged.status).toBe(401);
    expect(forged.body.code).toBe('invalid_signature');
  });
});

describe('a filter in the config', () => {
  it('refuses a catastrophic pattern at load, naming its key', async () => {
    await expect(
      startTestGateway({
        hooks: { mappings: [{ id: 'm', match: { path: 'm' }, filter: { path: 'a', matches: '(x+)+y' } }] },
      }),
    ).rejects.toThrow(/hooks\.mappings\[0\]\.filter.*may backtrack catastrophically/s);
  });
});
