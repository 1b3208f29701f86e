/**
 * Attachments at the ingress over real HTTP (docs/attachments.md), on SQLite and
 * PostgreSQL: every refusal (type, base64, name, count, decoded size 413, body limit
 * 413) stores nothing; an accepted run lists its files in the RunView (status route,
 * admin API, wait answer) and the admin API serves their bytes; a transform's agent
 * action takes them too; a retry carries them; an idempotent replay stores them once.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, HOOK_TOKEN, startTestGateway, type TestGateway, tempDir } from '../helpers/gateway.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';
import { expectError, expectInvalidPayload } from './support.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');
const TEXT = Buffer.from('line one\nline two ✓\n');

const b64 = (bytes: Buffer) => bytes.toString('base64');
const file = (name: string, mediaType: string, bytes: Buffer) => ({ name, mediaType, data: b64(bytes) });

const MAX_BYTES = 64 * 1024;

describe.each(PG_ENABLED ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const))(
  'attachments at the ingress (%s)',
  (driver) => {
    let gw: TestGateway;
    let dir: string;
    let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;

    beforeAll(async () => {
      dir = tempDir('agentgate-attachments-');
      const root = join(dir, 'hooks', 'transforms');
      mkdirSync(root, { recursive: true });
      writeFileSync(
        join(root, 'files.mjs'),
        `export default ({ payload }) => payload.broken ? { message: 'x', attachments: 'nope' } : ({
           message: 'from transform: ' + payload.title,
           attachments: payload.files.map((f) => ({ name: f.n, mediaType: f.t, data: f.d })),
         });`,
      );
      if (driver === 'postgres') database = await createTestDatabase();
      gw = await startTestGateway(
        {
          hooks: {
            maxBodyBytes: 256 * 1024,
            attachments: { maxBytes: MAX_BYTES },
            mappings: [{ id: 'files', match: { path: 'files' }, transform: { module: 'files.mjs' } }],
          },
          ...(database ? { store: { driver: 'postgres', url: database.url } } : {}),
        },
        { dir },
      );
    });
    afterAll(async () => {
      await gw?.stop();
      await database?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    const runCount = async () => (await gw.gateway.store.admin.listRuns({ limit: 1000 }))?.runs.length ?? 0;

    /** Sends `body` to /hooks/agent and checks that nothing was stored. */
    const refused = async (body: unknown, name = 'agent') => {
      const before = await runCount();
      const answer = await gw.hook(name, body);
      expect(await runCount()).toBe(before);
      return answer;
    };

    it('refuses a type outside the list, naming attachments[i].mediaType', async () => {
      for (const mediaType of ['image/svg+xml', 'text/html; charset=utf-8', 'application/zip', 'image', '']) {
        const answer = await refused({
          message: 'm',
          attachments: [file('a.png', 'image/png', PNG), file('x', mediaType, TEXT)],
        });
        expectInvalidPayload(answer, 'attachments[1].mediaType');
      }
    });

    it('refuses bad base64, naming attachments[i].data', async () => {
      const good = b64(TEXT);
      for (const data of [
        `${good.slice(0, 8)}\n${good.slice(8)}`, // a line break
        `${good} `, // a space
        good.replace(/=+$/, ''), // padding left out
        'QQ=A', // padding in the middle
        'QR==', // stray bits before the padding
        'ab-_', // the URL-safe alphabet
        'QUJD====',
      ]) {
        const answer = await refused({
          message: 'm',
          attachments: [file('ok.txt', 'text/plain', TEXT), { name: 'b.txt', mediaType: 'text/plain', data }],
        });
        expectInvalidPayload(answer, 'attachments[1].data');
      }
      expectInvalidPayload(
        await refused({ message: 'm', attachments: [{ name: 'a', mediaType: 'text/plain', data: 42 }] }),
        'attachments[0].data',
      );
    });

    it('refuses names that are paths, blank, too long or hold control characters', async () => {
      for (const name of [
        '../etc/passwd',
        'a\\b',
        '',
        '  ',
        'a\u0000b',
        'bad\nname',
        'x\u202Egnp.exe',
        '..',
        'n'.repeat(256),
      ]) {
        const answer = await refused({ message: 'm', attachments: [file(name, 'text/plain', TEXT)] });
        expectInvalidPayload(answer, 'attachments[0].name');
      }
      expectInvalidPayload(await refused({ message: 'm', attachments: 'nope' }), 'attachments');
      expectInvalidPayload(await refused({ message: 'm', attachments: ['nope'] }), 'attachments[0]');
    });

    it('refuses more than 10 files', async () => {
      const eleven = Array.from({ length: 11 }, (_, i) => file(`f${i}.txt`, 'text/plain', TEXT));
      expectInvalidPayload(await refused({ message: 'm', attachments: eleven }), 'attachments');
    });

    it('refuses files over hooks.attachments.maxBytes decoded with 413, and a body over the limit first', async () => {
      const half = Buffer.alloc(MAX_BYTES / 2 + 1, 7);
      const over = await refused({
        message: 'm',
        attachments: [file('a.pdf', 'application/pdf', half), file('b.pdf', 'application/pdf', half)],
      });
      expectError(over, 413, 'payload_too_large');
      expect(over.body.error).toContain('hooks.attachments.maxBytes');
      // Exactly at the limit is accepted.
      const exact = await gw.hook('agent', {
        message: 'm',
        deliver: false,
        attachments: [file('exact.bin.pdf', 'application/pdf', Buffer.alloc(MAX_BYTES, 1))],
      });
      expect(exact.status, exact.text).toBe(202);
      // hooks.maxBodyBytes applies first (the body is never parsed).
      const huge = await refused({
        message: 'm',
        attachments: [file('big.pdf', 'application/pdf', Buffer.alloc(300 * 1024, 1))],
      });
      expectError(huge, 413, 'payload_too_large');
      expect(huge.body.error).toContain('request body exceeds');
    });

    it('a transform’s files are checked the same way, and refusals store nothing', async () => {
      const answer = await refused(
        { title: 't', files: [{ n: 'x.svg', t: 'image/svg+xml', d: b64(TEXT) }] },
        'files',
      );
      expectInvalidPayload(answer, 'attachments[0].mediaType');
      // A transform returning something that is not a list of files is the transform's bug.
      expectError(await refused({ broken: true }, 'files'), 500, 'mapping_failed');
    });

    it('commits the files with the run: the RunView lists them and the admin API serves their bytes', async () => {
      const answer = await gw.hook('agent', {
        message: 'look at these',
        deliver: false,
        attachments: [
          file('dot.png', 'image/png', PNG),
          file('report.pdf', 'application/pdf', PDF),
          file('notes.txt', 'Text/Plain', TEXT),
          file('empty.json', 'application/json', Buffer.alloc(0)),
        ],
      });
      expect(answer.status, answer.text).toBe(202);
      const { runId } = answer.body;
      const expected = [
        { name: 'dot.png', mediaType: 'image/png', bytes: PNG.length },
        { name: 'report.pdf', mediaType: 'application/pdf', bytes: PDF.length },
        { name: 'notes.txt', mediaType: 'text/plain', bytes: TEXT.length },
        { name: 'empty.json', mediaType: 'application/json', bytes: 0 },
      ];
      expect((await gw.admin(`/api/runs/${runId}`)).body.attachments).toEqual(expected);
      const status = await fetch(`${gw.url}/hooks/runs/${runId}`, {
        headers: { authorization: `Bearer ${HOOK_TOKEN}` },
      });
      expect(((await status.json()) as { attachments: unknown }).attachments).toEqual(expected);
      const list = (await gw.admin('/api/runs?limit=100')).body.runs.find(
        (r: { runId: string }) => r.runId === runId,
      );
      expect(list.attachments).toEqual(expected);

      const get = (index: number, token = ADMIN_TOKEN) =>
        fetch(`${gw.url}/api/runs/${runId}/attachments/${index}`, {
          headers: { authorization: `Bearer ${token}` },
        });
      const png = await get(0);
      expect(png.status).toBe(200);
      expect(png.headers.get('content-type')).toBe('image/png');
      expect(png.headers.get('content-disposition')).toMatch(/^inline; filename="dot.png"/);
      expect(png.headers.get('x-content-type-options')).toBe('nosniff');
      expect(Buffer.from(await png.arrayBuffer()).equals(PNG)).toBe(true);
      const pdf = await get(1);
      expect(pdf.headers.get('content-type')).toBe('application/pdf');
      expect(pdf.headers.get('content-disposition')).toMatch(/^attachment; filename="report.pdf"/);
      expect(Buffer.from(await pdf.arrayBuffer()).equals(PDF)).toBe(true);
      const text = await get(2);
      expect(text.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(text.headers.get('content-disposition')).toMatch(/^attachment;/);
      expect(text.headers.get('content-security-policy')).toContain('sandbox');
      expect(await text.text()).toBe(TEXT.toString('utf8'));
      expect((await get(3)).status).toBe(200);
      expect((await get(4)).status).toBe(404);
      expect((await get(0, HOOK_TOKEN)).status).toBe(401);
      expect(
        (
          await fetch(`${gw.url}/api/runs/${runId}/attachments/x`, {
            headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
          })
        ).status,
      ).toBe(400);

      // A run without files lists none.
      const plain = await gw.hook('agent', { message: 'no files', deliver: false });
      expect((await gw.admin(`/api/runs/${plain.body.runId}`)).body.attachments).toEqual([]);
    });

    it('takes a transform’s files, and an idempotent replay stores them once', async () => {
      const body = { title: 'T', files: [{ n: 'a.txt', t: 'text/plain', d: b64(TEXT) }] };
      const headers = { 'idempotency-key': `files-${driver}` };
      const first = await gw.hook('files', body, headers);
      expect(first.status, first.text).toBe(202);
      const replay = await gw.hook('files', body, headers);
      expect(replay.body.runId).toBe(first.body.runId);
      const view = (await gw.admin(`/api/runs/${first.body.runId}`)).body;
      expect(view.message).toBe('from transform: T');
      expect(view.attachments).toEqual([{ name: 'a.txt', mediaType: 'text/plain', bytes: TEXT.length }]);
      expect(
        (await gw.gateway.store.runs.loadAttachments(first.body.runId)).map((f) => f.data.toString()),
      ).toEqual([TEXT.toString()]);
    });

    it('a retry carries the files to the new run', async () => {
      const store = gw.gateway.store;
      const accepted = await gw.hook('agent', {
        message: 'retry me',
        deliver: false,
        attachments: [file('dot.png', 'image/png', PNG), file('notes.txt', 'text/plain', TEXT)],
      });
      const runId = accepted.body.runId as string;
      // Finish it as failed, as a worker would.
      const claimed = (await store.runs.claimRuns('test-owner', Date.now(), 60_000, 1000)).find(
        (run) => run.id === runId,
      );
      expect(claimed?.attachmentInfo.map((f) => f.name)).toEqual(['dot.png', 'notes.txt']);
      const done = await store.runs.completeRun({
        runId,
        owner: 'test-owner',
        sessionKey: claimed?.sessionKey as string,
        status: 'failed',
        reply: null,
        error: 'boom',
        finishedAt: Date.now(),
        transcript: [],
        summary: {
          id: `evt_retry_${driver}`,
          sessionKey: 'agent:main:main',
          text: 'x',
          source: `run:${runId}`,
          wakeMode: 'next-heartbeat',
          ts: Date.now(),
        },
        delivery: { status: 'none', channel: null, to: null, reason: null },
      });
      expect(done).toBe(true);
      const retry = await fetch(`${gw.url}/api/runs/${runId}/retry`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(retry.status).toBe(202);
      const newId = ((await retry.json()) as { runId: string }).runId;
      const view = (await gw.admin(`/api/runs/${newId}`)).body;
      expect(view.retryOf).toBe(runId);
      expect(view.attachments).toEqual([
        { name: 'dot.png', mediaType: 'image/png', bytes: PNG.length },
        { name: 'notes.txt', mediaType: 'text/plain', bytes: TEXT.length },
      ]);
      const bytes = await store.runs.loadAttachments(newId);
      expect(bytes[0]?.data.equals(PNG)).toBe(true);
      expect(bytes[1]?.data.equals(TEXT)).toBe(true);
    });
  },
);
