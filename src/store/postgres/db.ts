/**
 * The connection pool and the transaction helpers every PostgreSQL write goes
 * through. Any failure of a transaction (the database gone, a constraint, a
 * timeout) rolls it back and surfaces as StoreUnavailableError, so callers see
 * the same error shape as on SQLite and nothing is half-written.
 *
 * The pool's connections pipeline: statements queued on a connection before the
 * answers of the earlier ones are back go out at once (node-postgres `pipeline`),
 * each with its own Sync, executed by the server one after another as if sent
 * one at a time. Code that awaits each statement behaves exactly as without;
 * `inPipelinedTransaction` uses it to pay one round trip for several statements
 * (docs/postgres.md, Group commit).
 */
import { createHash } from 'node:crypto';
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
    pipeline: true,
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
export function inTransaction<T>(pool: pg.Pool, work: (tx: Tx) => Promise<T>): Promise<T> {
  return inTransactionWith(pool, async (client) => {
    // Not waited for: it leaves with the work's first statement (the connection pipelines).
    // It fails only when the connection does, and then so does that statement.
    const begun = client.query('BEGIN');
    begun.catch(() => {});
    const result = await work(client);
    await begun;
    const commit = await client.query('COMMIT');
    // A failed statement the work caught aborted the transaction: COMMIT then rolls back.
    if (commit.command !== 'COMMIT')
      throw new StoreUnavailableError(new Error('the transaction was rolled back at commit'));
    return result;
  });
}

/** A pooled connection for `transaction`; on any failure, ROLLBACK and the error mapped. */
async function inTransactionWith<T>(
  pool: pg.Pool,
  transaction: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw new StoreUnavailableError(error);
  }
  let broken = false;
  try {
    return await transaction(client);
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

const names = new Map<string, string>();

/**
 * A statement by name, prepared once per connection: the server does not parse
 * it again (docs/postgres.md, PgBouncer). The name is derived from the text: the
 * store's own statements, a bounded set. A prepared statement must name its
 * result columns (no `*`): one whose columns change under it (another
 * replica's migration adding one) fails until it is prepared again.
 */
function prepared(text: string, values: unknown[] | undefined): pg.QueryConfig {
  let name = names.get(text);
  if (!name) {
    name = `ag_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
    names.set(text, name);
  }
  return { name, text, values };
}

interface Corkable {
  cork: () => void;
  uncork: () => void;
}

/**
 * A transaction whose statements are sent without waiting for each answer:
 * `send` queues a statement, `flush` waits for everything sent so far. BEGIN
 * leaves with the first statements and COMMIT with the last, so a transaction
 * whose writes need no answer in between costs one round trip.
 */
export class Pipeline {
  private sent: Promise<unknown>[] = [];
  private corked = false;

  constructor(private readonly client: pg.PoolClient) {}

  send<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    this.cork();
    const result = this.client.query<R>(prepared(text, values));
    result.catch(() => {}); // reported by flush, in the order sent
    this.sent.push(result);
    return result;
  }

  /**
   * Statements sent in the same tick leave in one write (one syscall each way
   * instead of one per statement): the socket is corked at the first and
   * uncorked on the next tick, so nothing can wait on a corked statement.
   */
  private cork(): void {
    if (this.corked) return;
    const stream = (this.client as unknown as { connection?: { stream?: Partial<Corkable> } }).connection
      ?.stream;
    if (typeof stream?.cork !== 'function' || typeof stream.uncork !== 'function') return;
    const { cork, uncork } = stream as Corkable;
    this.corked = true;
    cork.call(stream);
    process.nextTick(() => {
      this.corked = false;
      uncork.call(stream);
    });
  }

  /**
   * BEGIN, and generic plans for the transaction's statements: they are the
   * store's own, each prepared once (see `prepared`), and their values are
   * arrays and keys that index scans serve whatever they hold; PostgreSQL's
   * own choice kept planning each one again on every execution, since a
   * custom plan knows the length of an array and so always looks cheaper.
   * One simple-protocol message, both statements.
   */
  begin(): void {
    this.cork();
    const result = this.client.query('BEGIN; SET LOCAL plan_cache_mode = force_generic_plan');
    result.catch(() => {});
    this.sent.push(result);
  }

  /**
   * Waits for every statement sent so far; throws the first one's failure (in
   * an aborted transaction the later ones only fail because of it).
   */
  async flush(): Promise<void> {
    const sent = this.sent;
    this.sent = [];
    for (const outcome of await Promise.allSettled(sent)) {
      if (outcome.status === 'rejected') throw outcome.reason;
    }
  }
}

/**
 * Runs `work` in one pipelined transaction (see Pipeline). BEGIN is sent
 * without waiting for its answer: it fails only when the connection does, and
 * then so does everything queued behind it. A COMMIT in a transaction that a
 * failed statement aborted answers ROLLBACK instead of an error, so the
 * statements' own failures are checked first, and the COMMIT's tag too.
 */
export async function inPipelinedTransaction<T>(
  pool: pg.Pool,
  work: (tx: Pipeline) => Promise<T>,
): Promise<T> {
  return inTransactionWith(pool, async (client) => {
    const tx = new Pipeline(client);
    tx.begin();
    let result: T;
    try {
      result = await work(tx);
    } catch (error) {
      await tx.flush().catch(() => {}); // nothing of the transaction left in flight
      throw error;
    }
    const commit = tx.send('COMMIT');
    await tx.flush();
    if ((await commit).command !== 'COMMIT')
      throw new StoreUnavailableError(new Error('the transaction was rolled back at commit'));
    return result;
  });
}

/** A read on any pooled connection; failures become StoreUnavailableError. */
export function read<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: unknown[],
): Promise<R[]> {
  return rowsOf<R>(pool, { text, values });
}

/** The same as `read`, as a prepared statement (see `prepared`): for the reads every run makes. */
export function readPrepared<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: unknown[],
): Promise<R[]> {
  return rowsOf<R>(pool, prepared(text, values));
}

async function rowsOf<R extends pg.QueryResultRow>(pool: pg.Pool, query: pg.QueryConfig): Promise<R[]> {
  try {
    return (await pool.query<R>(query)).rows;
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
