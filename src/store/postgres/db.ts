/**
 * The connection pool and the one transaction helper every PostgreSQL write
 * goes through. Any failure of a transaction (the database gone, a constraint,
 * a timeout) rolls it back and surfaces as StoreUnavailableError, so callers
 * see the same error shape as on SQLite and nothing is half-written.
 */
import pg from 'pg';
import { StoreUnavailableError } from '../types.js';

export interface PoolSettings {
  url: string;
  /** Connections per replica (default 10). */
  poolMax?: number;
  /** How long a query may wait for a free connection or a new one (ms). */
  connectTimeoutMs?: number;
}

/** BIGINT columns hold ms timestamps and sequence numbers, all well within 2^53. */
const INT8_OID = 20;
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as never,
};

export function createPool(settings: PoolSettings): pg.Pool {
  const pool = new pg.Pool({
    connectionString: settings.url,
    max: settings.poolMax ?? 10,
    connectionTimeoutMillis: settings.connectTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
    types,
    application_name: 'agentgate',
  });
  // An idle connection that dies (the server restarted) is dropped and replaced
  // on next use; without a listener the error would crash the process.
  pool.on('error', () => {});
  // The same for a connection that dies while checked out between two queries: its
  // next query fails (and the transaction with it); the event must not crash the process.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

export type Tx = pg.PoolClient;

/** Runs `work` in one transaction; rolls back and throws StoreUnavailableError on any failure. */
export async function inTransaction<T>(pool: pg.Pool, work: (tx: Tx) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw new StoreUnavailableError(error);
  }
  let broken = false;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch {
      broken = true;
    }
    if (error instanceof StoreUnavailableError) throw error;
    // A failure of the caller's own code (not the database's) keeps its type.
    if (!(error instanceof pg.DatabaseError) && !isConnectionError(error)) throw error;
    throw new StoreUnavailableError(error);
  } finally {
    client.release(broken);
  }
}

/** A read on any pooled connection; failures become StoreUnavailableError. */
export async function read<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: unknown[],
): Promise<R[]> {
  try {
    return (await pool.query<R>(text, values)).rows;
  } catch (error) {
    throw new StoreUnavailableError(error);
  }
}

function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  const message = (error as Error)?.message ?? '';
  return (
    typeof code === 'string' ||
    /Connection terminated|connection timeout|Client has encountered a connection error/i.test(message)
  );
}
