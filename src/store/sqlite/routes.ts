/**
 * The last delivery route of each main session (`channel: "last"`; docs/agent-runs.md).
 * Its own small piece because both sides write it: sessions (an operator's or a
 * test's explicit route) and the outbox (every successful delivery).
 */
import type Database from 'better-sqlite3';
import type { DeliveryRoute } from '../types.js';

export class SqliteRoutes {
  private readonly s;

  constructor(db: Database.Database) {
    this.s = {
      get: db.prepare<[string], { channel: string; recipient: string }>(
        'SELECT channel, recipient FROM routes WHERE session_key = ?',
      ),
      set: db.prepare(
        `INSERT INTO routes (session_key, channel, recipient, updated_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (session_key) DO UPDATE SET channel = excluded.channel, recipient = excluded.recipient,
                                                  updated_at = excluded.updated_at`,
      ),
    };
  }

  read(mainSessionKey: string): DeliveryRoute | undefined {
    const row = this.s.get.get(mainSessionKey);
    return row ? { channel: row.channel, to: row.recipient } : undefined;
  }

  /** For use inside a caller's transaction too. */
  write(mainSessionKey: string, route: DeliveryRoute, now: number): void {
    this.s.set.run(mainSessionKey, route.channel, route.to, now);
  }
}
