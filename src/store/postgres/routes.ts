/**
 * A main session's last route (where its replies went last), written inside
 * the caller's transaction: by a delivery that succeeded and by a session's
 * own route update.
 */
import type pg from 'pg';
import type { DeliveryRoute } from '../types.js';
import type { Tx } from './db.js';

export async function writeRouteInTx(
  tx: Tx | pg.Pool,
  sessionKey: string,
  route: DeliveryRoute,
  now: number,
): Promise<void> {
  await tx.query(
    `INSERT INTO routes (session_key, channel, recipient, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (session_key) DO UPDATE SET channel = excluded.channel, recipient = excluded.recipient,
                                              updated_at = excluded.updated_at`,
    [sessionKey, route.channel, route.to, now],
  );
}
