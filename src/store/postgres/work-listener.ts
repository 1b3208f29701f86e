/**
 * LISTEN on a dedicated connection (never a pooled one: a pooled connection is
 * handed to other queries, and PgBouncer in transaction mode drops LISTEN), so a
 * replica's workers wake within milliseconds when any replica commits new work,
 * instead of polling fast. Writers send one NOTIFY per commit, not per row.
 * A lost connection is re-opened after a pause; listeners are then called once,
 * since notifications sent meanwhile were missed. The workers' slow poll stays
 * as the safety net.
 */
import pg from 'pg';

export const WORK_CHANNEL = 'agentgate_work';
const RECONNECT_MS = 1000;

export class WorkListener {
  private readonly listeners = new Set<() => void>();
  private client: pg.Client | undefined;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private connecting: Promise<void> = Promise.resolve();

  constructor(private readonly url: string) {}

  /** Calls `listener` whenever new work may be claimable; returns the unsubscribe. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    if (!this.client && !this.timer) this.connecting = this.connect();
    return () => this.listeners.delete(listener);
  }

  /** Settles once the current LISTEN is in place (or failed and will be retried). */
  listening(): Promise<void> {
    return this.connecting;
  }

  private emit(): void {
    for (const listener of this.listeners) listener();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.url, application_name: 'agentgate-listen' });
    this.client = client;
    const retry = () => {
      if (this.client !== client) return;
      this.client = undefined;
      client.end().catch(() => {});
      if (this.closed) return;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.connecting = this.connect().then(() => this.emit());
      }, RECONNECT_MS);
      this.timer.unref();
    };
    client.on('error', retry);
    client.on('end', retry);
    client.on('notification', () => this.emit());
    try {
      await client.connect();
      await client.query(`LISTEN ${WORK_CHANNEL}`);
    } catch {
      retry();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }
}
