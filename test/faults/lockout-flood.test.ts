/**
 * The lockout cannot be washed out (docs/authentication.md, "Two tables"): an
 * attacker address gets exactly 20 evaluated guesses in the minute, and stays
 * locked (429) while 10,000 other addresses — IPv4 and IPv6, each in its own /64 —
 * fail once each. Client addresses come from X-Forwarded-For behind a trusted
 * loopback proxy. On one process (SQLite), and on two replicas sharing PostgreSQL
 * with every request sent to the other replica than the one before
 * (docs/authentication.md).
 */
import { rmSync } from 'node:fs';
import { Agent } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOOK_TOKEN } from '../helpers/gateway.js';
import { createTestDatabase, PG_ENABLED } from '../store/drivers.js';
import { reportFigure } from './support/figures.js';
import { GatewayProcess } from './support/gateway-process.js';
import { post } from './support/load.js';

const ATTACKER = '203.0.113.66';
// Cheap enough (a few seconds) to keep at full size in the short mode too.
const OTHER_ADDRESSES = 10_000;
const WRONG = { authorization: 'Bearer wrong-token-0123456789abcdef0123' };
const BODY = JSON.stringify({ text: 'guess' });

/** The i-th other address: alternately IPv4 (198.18.0.0/15) and IPv6 (one /64 each, 2001:db8::/32). */
function otherAddress(i: number): string {
  if (i % 2 === 0) return `198.18.${(i >> 8) & 0xff}.${i & 0xff}`;
  return `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`;
}

const TRUSTED = { gateway: { trustedProxies: ['127.0.0.1/8', '::1/128'] } };

describe.each([
  { engine: 'sqlite', replicas: 1 },
  { engine: 'postgres', replicas: 2 },
])('the lockout under an address flood ($engine, $replicas replica(s))', ({ engine, replicas }) => {
  let gateways: GatewayProcess[] = [];
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let agent: Agent;
  const skip = engine === 'postgres' && !PG_ENABLED;

  beforeAll(async () => {
    if (skip) return;
    let config: Record<string, unknown> = TRUSTED;
    if (engine === 'postgres') {
      database = await createTestDatabase({ durable: true });
      config = { ...TRUSTED, store: { driver: 'postgres', url: database.url } };
    }
    gateways = Array.from({ length: replicas }, () => new GatewayProcess(undefined, config));
    for (const gateway of gateways) await gateway.start();
    agent = new Agent({ keepAlive: true, maxSockets: 32 });
  });
  afterAll(async () => {
    agent?.destroy();
    for (const gateway of gateways) {
      await gateway.stop();
      rmSync(gateway.dir, { recursive: true, force: true });
    }
    await database?.drop();
  });

  /** Each request to the next replica in turn. */
  let sent = 0;
  function guess(from: string, headers: Record<string, string> = WRONG) {
    const gateway = gateways[sent++ % gateways.length] as GatewayProcess;
    return post(agent, gateway.url, '/hooks/wake', BODY, { ...headers, 'x-forwarded-for': from });
  }

  it.skipIf(skip)(
    `gives an attacker exactly 20 evaluated guesses while ${OTHER_ADDRESSES} other addresses fail`,
    async () => {
      const started = Date.now();
      const attackerStatuses: number[] = [];
      // 25 sequential guesses: 20 evaluated (401), then locked (429).
      for (let i = 0; i < 25; i++) attackerStatuses.push((await guess(ATTACKER)).status);
      expect(attackerStatuses.slice(0, 20)).toEqual(Array(20).fill(401));
      expect(attackerStatuses.slice(20)).toEqual(Array(5).fill(429));

      // The flood, 32 at a time, with one more attacker guess after every 500 others.
      const otherStatuses = new Map<number, number>();
      let next = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (next < OTHER_ADDRESSES) {
            const i = next++;
            const { status } = await guess(otherAddress(i));
            otherStatuses.set(status, (otherStatuses.get(status) ?? 0) + 1);
            if (i % 500 === 499) attackerStatuses.push((await guess(ATTACKER)).status);
          }
        }),
      );
      // After the flood: still locked on every replica, even with the right token.
      for (let i = 0; i < 5; i++) attackerStatuses.push((await guess(ATTACKER)).status);
      const withRightToken = await Promise.all(
        gateways.map(() => guess(ATTACKER, { authorization: `Bearer ${HOOK_TOKEN}` })),
      );
      const elapsedMs = Date.now() - started;

      const evaluated = attackerStatuses.filter((status) => status === 401).length;
      reportFigure(engine === 'sqlite' ? 'lockout-flood' : 'lockout-flood-postgres', {
        replicas,
        otherAddresses: OTHER_ADDRESSES,
        attackerGuesses: attackerStatuses.length + withRightToken.length,
        attackerEvaluated: evaluated,
        otherStatuses: Object.fromEntries(otherStatuses),
        elapsedMs,
      });
      // All of it inside the one-minute window and lockout, or the figure means nothing.
      expect(elapsedMs).toBeLessThan(60_000);
      expect(otherStatuses).toEqual(new Map([[401, OTHER_ADDRESSES]]));
      expect(evaluated).toBe(20);
      expect(attackerStatuses.slice(20).every((status) => status === 429)).toBe(true);
      for (const answer of withRightToken) {
        expect(answer.status).toBe(429);
        expect(JSON.parse(answer.body)).toMatchObject({ ok: false, code: 'rate_limited' });
      }
    },
  );
});
