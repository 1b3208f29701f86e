/**
 * The nesting bound of hook bodies over real HTTP (docs/errors.md, "Nesting
 * depth"): a body nested exactly MAX_JSON_DEPTH levels is accepted, one level
 * more is 400 `invalid_json` naming the limit, and hostile depths (5,000 and
 * 100,000 levels) are 400 on wake, agent and mapped hooks without templates —
 * never 500, and nothing is stored. Brackets inside strings do not count.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/util/json-depth.js';
import { type Answer, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { expectError, listEvents } from './support.js';

/** Bodies up to ~600 KB: 100,000 levels of objects must reach the depth check, not the byte limit. */
const MAX_BODY_BYTES = 1 << 20;

/** `depth` levels of arrays, or of objects (each holding the next under "a"). */
const arrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const objects = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;

/** A valid request body whose `deep` field nests `depth` levels: `depth + 1` in all. */
const withDeep = (fields: Record<string, unknown>, deep: string) =>
  `${JSON.stringify(fields).slice(0, -1)},"deep":${deep}}`;

/** The fields each hook needs to accept a body (the mappings take any object). */
const HOOKS: [string, Record<string, unknown>, number][] = [
  ['wake', { text: 'depth probe' }, 200],
  ['agent', { message: 'depth probe' }, 202],
  ['plain', { note: 'depth probe' }, 202],
  ['plain-wake', { note: 'depth probe' }, 200],
];

function expectTooDeep(answer: Answer): void {
  expectError(answer, 400, 'invalid_json');
  expect(answer.body.error).toBe(`request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
}

describe('JSON nesting depth of hook bodies', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      hooks: {
        maxBodyBytes: MAX_BODY_BYTES,
        // Without templates: the whole payload becomes the message (JSON.stringify), where
        // 5,000 levels overflowed the stack before the bound.
        mappings: [
          { id: 'plain', match: { path: 'plain' }, action: 'agent' },
          { id: 'plain-wake', match: { path: 'plain-wake' }, action: 'wake' },
        ],
      },
    });
  });
  afterAll(() => gw.stop());

  /** Rows of the tables a hook request writes to. */
  const storedRows = () => {
    const db = new Database(join(gw.dir, 'state', 'agentgate.db'), { readonly: true });
    try {
      const count = (table: string) =>
        (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
      return { events: count('events'), runs: count('runs'), idempotency: count('idempotency') };
    } finally {
      db.close();
    }
  };

  describe.each(HOOKS)('/hooks/%s', (hook, fields, accepted) => {
    it(`accepts a body nested exactly ${MAX_JSON_DEPTH} levels, of arrays and of objects`, async () => {
      for (const nest of [arrays, objects]) {
        const answer = await gw.hook(hook, withDeep(fields, nest(MAX_JSON_DEPTH - 1)));
        expect(answer.status, answer.text).toBe(accepted);
      }
    });

    it('refuses one level more with 400 invalid_json naming the limit', async () => {
      for (const nest of [arrays, objects]) {
        expectTooDeep(await gw.hook(hook, withDeep(fields, nest(MAX_JSON_DEPTH))));
      }
    });

    it.each([5_000, 100_000])(
      'refuses %i levels, in a field or as the whole body, never 500',
      async (depth) => {
        for (const body of [
          withDeep(fields, arrays(depth)),
          withDeep(fields, objects(depth)),
          arrays(depth),
          objects(depth),
        ]) {
          expectTooDeep(await gw.hook(hook, body));
        }
      },
    );
  });

  it('stores nothing for a refused body, and its Idempotency-Key stays unused', async () => {
    const before = storedRows();
    const key = `depth-${Date.now()}`;
    for (const [hook, fields] of HOOKS) {
      for (const body of [withDeep(fields, arrays(MAX_JSON_DEPTH)), withDeep(fields, objects(5_000))]) {
        expectTooDeep(await gw.hook(hook, body, { 'idempotency-key': key }));
      }
    }
    expect(storedRows()).toEqual(before);

    const fresh = await gw.hook('agent', { message: 'after the refusals' }, { 'idempotency-key': key });
    expect(fresh.status, fresh.text).toBe(202);
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
  });

  it('does not count brackets inside strings, escaped quotes and backslashes included', async () => {
    const many = MAX_JSON_DEPTH * 2;
    // Written as raw JSON so the escapes are exact: `\"` is a quote inside the string, `\\\"` an
    // escaped backslash then such a quote, and `\\` before the closing quote an escaped backslash.
    const raw = [
      '{"text":"',
      '['.repeat(many),
      '\\"',
      '{'.repeat(many),
      '\\\\\\"',
      '['.repeat(many),
      '\\\\',
      '","mode":"next-heartbeat","key ',
      '{'.repeat(many),
      '":["\\"]]]',
      '['.repeat(many),
      '"]}',
    ].join('');
    const { text } = JSON.parse(raw) as { text: string };
    const answer = await gw.hook('wake', raw);
    expect(answer.status, answer.text).toBe(200);
    const events = await listEvents(gw);
    expect(events.map((event) => event.text)).toContain(text);

    // The same brackets outside strings are structure: refused.
    expectTooDeep(
      await gw.hook('wake', withDeep({ text: 'x' }, `[${JSON.stringify(text)},${arrays(many)}]`)),
    );
  });

  it('checks the depth after the JSON row and before field validation (docs/errors.md)', async () => {
    // Too deep and missing its required field: the depth decides (invalid_json, not invalid_payload).
    expectTooDeep(await gw.hook('wake', withDeep({ nothing: 'here' }, arrays(5_000))));
    expectTooDeep(await gw.hook('agent', withDeep({ message: 42 }, objects(5_000))));
    // Within the bound, the missing field is the answer.
    expectError(await gw.hook('wake', withDeep({ nothing: 'here' }, arrays(3))), 400, 'invalid_payload');
    // Still a body that is not JSON at all, or not an object, is refused as before.
    const notJson = await gw.hook('wake', '{"text": "x",');
    expectError(notJson, 400, 'invalid_json');
    expect(notJson.body.error).toMatch(/^request body is not valid JSON/);
    const notObject = await gw.hook('wake', arrays(3));
    expectError(notObject, 400, 'invalid_json');
    expect(notObject.body.error).toBe('request body must be a JSON object');
  });

  it('puts the byte limit and the token first: a deep body over the limit is 413, without a token 401', async () => {
    expectError(await gw.hook('wake', arrays(MAX_BODY_BYTES)), 413, 'payload_too_large');
    const anonymous = await gw.hook('wake', arrays(5_000), { authorization: 'Bearer wrong' });
    expectError(anonymous, 401, 'unauthorized');
    // An authenticated request clears the failure count of this address.
    expect((await gw.hook('wake', { text: 'clears the failure count' })).status).toBe(200);
  });
});
