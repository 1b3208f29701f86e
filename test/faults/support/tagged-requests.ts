/**
 * Requests that can be traced in the store afterwards: each has a unique text
 * and Idempotency-Key, and its answer is kept. `checkStore` then proves that
 * every 2xx is committed whole and that nothing refused left a trace.
 */
import type { Agent } from 'node:http';
import type Database from 'better-sqlite3';
import { post } from './load.js';

export interface Tagged {
  key: string;
  kind: 'wake' | 'agent';
  text: string;
  status: number;
  code?: string;
  id?: string;
  replayed: boolean;
}

export async function sendTagged(
  agent: Agent,
  url: string,
  key: string,
  kind: Tagged['kind'],
): Promise<Tagged> {
  const text = `store fault ${key}`;
  const body = kind === 'wake' ? { text, mode: 'next-heartbeat' } : { message: text, deliver: false };
  const answer = await post(agent, url, `/hooks/${kind}`, JSON.stringify(body), { 'idempotency-key': key });
  const parsed = JSON.parse(answer.body) as { eventId?: string; runId?: string; code?: string; ok?: boolean };
  return {
    key,
    kind,
    text,
    status: answer.status,
    code: parsed.code,
    id: parsed.eventId ?? parsed.runId,
    replayed: false,
  };
}

export function accepted(t: Tagged): boolean {
  return t.status === 200 || t.status === 202;
}

/**
 * Problems found in the store (an empty list when all is well), given every
 * request's final outcome (`final`, keyed by idempotency key: the retry's
 * answer where the first was refused).
 */
export function checkStore(db: Database.Database, final: Map<string, Tagged>): string[] {
  const problems: string[] = [];
  const integrity = db.pragma('integrity_check', { simple: true });
  if (integrity !== 'ok') problems.push(`integrity_check: ${integrity}`);

  const rowsByText = new Map<string, string[]>();
  for (const row of db
    .prepare(
      `SELECT id, text FROM events WHERE text LIKE 'store fault %'
       UNION ALL SELECT id, message FROM runs WHERE message LIKE 'store fault %'`,
    )
    .all() as { id: string; text: string }[]) {
    rowsByText.set(row.text, [...(rowsByText.get(row.text) ?? []), row.id]);
  }
  const records = new Map(
    (db.prepare('SELECT key, body FROM idempotency').all() as { key: string; body: string }[]).map((r) => [
      r.key,
      r.body,
    ]),
  );

  for (const t of final.values()) {
    const rows = rowsByText.get(t.text) ?? [];
    const record = records.get(t.key);
    if (accepted(t)) {
      // Answered 2xx: committed once, with its idempotency record naming the same id.
      if (rows.length !== 1 || rows[0] !== t.id)
        problems.push(`${t.key}: answered ${t.id}, stored [${rows}]`);
      if (!record?.includes(`"${t.id}"`))
        problems.push(`${t.key}: idempotency record ${record ?? 'missing'}`);
    } else {
      // Never accepted: no trace at all.
      if (rows.length > 0) problems.push(`${t.key}: refused ${t.status} but stored [${rows}]`);
      if (record) problems.push(`${t.key}: refused ${t.status} but its key was recorded`);
    }
    rowsByText.delete(t.text);
  }
  for (const [text, ids] of rowsByText) problems.push(`stored but never answered 2xx: "${text}" [${ids}]`);
  return problems;
}
