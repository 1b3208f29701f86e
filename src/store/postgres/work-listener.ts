/**
 * LISTEN on a dedicated connection (never a pooled one: a pooled connection is
 * handed to other queries, and PgBouncer in transaction mode drops LISTEN), so a
 * replica learns within milliseconds what another replica committed, instead of
 * polling fast: new work (`agentgate_work`), new auth lockouts
 * (`agentgate_lockout`) and streamed runs' reply pieces (`agentgate_delta`, sent
 * outside any transaction). Writers send one NOTIFY per commit, not per row.
 * A lost connection is re-opened after a pause; every listener is then called
 * once with `undefined`, since notifications sent meanwhile were missed. The
 * slow polls (workers, lockout refresh) stay as the safety net.
 */
import pg from 'pg';

export const WORK_CHANNEL = 'agentgate_work';
export const LOCKOUT_CHANNEL = 'agentgate_lockout';
/** Streamed runs' reply pieces (streaming/run-deltas.ts). */
export const DELTA_CHANNEL = 'agentgate_delta';
const CHANNELS = [WORK_CHANNEL, LOCKOUT_CHANNEL, DELTA_CHANNEL] as const;
export type Channel = (typeof CHANNELS)[number];
const RECONNECT_MS = 1000;

/** A notification's payload, or undefined after a reconnect (some may have been missed). */
export type NotificationListener = (payload: string | undefined) => void;

export class WorkListener {
  private readonly listeners = new Map<Channel, Set<NotificationListener>>(
    CHANNELS.map((c) => [c, new Set()]),
  );
  private client: pg.Client | undefined;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private connecting: Promise<void> = Promise.resolve();

  constructor(private readonly url: string) {}

  /** Calls `listener` on every notification of `channel`; returns the unsubscribe. */
  subscribe(channel: Channel, listener: NotificationListener): () => void {
    this.listeners.get(channel)?.add(listener);
    if (!this.client && !this.timer && !this.closed) this.connecting = this.connect();
    return () => this.listeners.get(channel)?.delete(listener);
  }

  /** Settles once the current LISTEN is in place (or failed and will be retried). */
  listening(): Promise<void> {
    return this.connecting;
  }

  private emit(channel: string, payload: string | undefined): void {
    for (const listener of this.listeners.get(channel as Channel) ?? []) listener(payload);
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
        this.connecting = this.connect().then(() => {
          for (const channel of CHANNELS) this.emit(channel, undefined);
        });
      }, RECONNECT_MS);
      this.timer.unref();
    };
    client.on('error', retry);
    client.on('end', retry);
    client.on('notification', (message) => this.emit(message.channel, message.payload));
    try {
      await client.connect();
      for (const channel of CHANNELS) await client.query(`LISTEN ${channel}`);
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
