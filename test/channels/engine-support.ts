/**
 * What the delivery engine's unit tests drive it with: the real SQLite outbox
 * (in memory), a manual clock, and scripted adapters whose sends the test
 * answers one by one — or never, like a platform that hangs.
 */
import Database from 'better-sqlite3';
import pino from 'pino';
import { renderMarkdown } from '../../src/channels/format/index.js';
import { renderNotice } from '../../src/channels/format/notice.js';
import { writePlain } from '../../src/channels/format/plain.js';
import type { ChannelAdapter, OutboundMessage, OutboundPart, SendResult } from '../../src/channels/types.js';
import type { ChannelId } from '../../src/config/schema.js';
import { SqliteAlerts } from '../../src/store/sqlite/alerts.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { type NewOutboxItem, SqliteOutbox } from '../../src/store/sqlite/outbox.js';
import { SqliteTxWriter } from '../../src/store/sqlite/tx-writer.js';
import type { DeliveryRoute } from '../../src/store/types.js';

export const silentLog = pino({ level: 'silent' });

/** The real outbox on an in-memory database, with last routes in a map. */
export function memoryOutbox() {
  const db = new Database(':memory:');
  for (const step of MIGRATIONS) db.exec(step);
  const routes = new Map<string, DeliveryRoute>();
  const alerts = new SqliteAlerts(db);
  const routeWriter = { write: (sessionKey: string, route: DeliveryRoute) => routes.set(sessionKey, route) };
  const writer = new SqliteTxWriter(db, routeWriter, { arm: () => {} }, alerts);
  const outbox = new SqliteOutbox(db, writer, alerts);
  let now = 1_000;
  return {
    db,
    routes,
    store: {
      outbox,
      sessions: { getRoute: async (sessionKey: string) => routes.get(sessionKey) },
    },
    /** Enqueues a reply (defaults: session S, enqueued now). */
    enqueue(item: Partial<NewOutboxItem> & { channel: string; text: string }, at = now++) {
      writer.enqueueDelivery(
        { kind: 'heartbeat', refId: `hb_${at}`, mainSessionKey: 'S', to: null, ...item },
        at,
      );
    },
    /** Every outbox row, oldest first. */
    rows(): {
      channel: string;
      recipient: string | null;
      status: string;
      parts_sent: number;
      attempts: number;
      next_attempt_at: number;
      last_error: string | null;
      resolved_to: string | null;
    }[] {
      return db.prepare('SELECT * FROM deliveries ORDER BY seq').all() as never;
    },
  };
}

/** The manual clock (and `settle`) shared with the worker and heartbeat tests. */
export { ManualClock, settle } from '../helpers/manual-clock.js';

export interface Call {
  message: OutboundMessage;
  signal?: AbortSignal;
  /** Answers the send: delivered. */
  deliver(): void;
  /** Answers the send with an error (DeliveryError for the platform's own failures). */
  fail(error: Error): void;
}

/** An adapter whose sends wait for the test to answer them; `auto` answers delivered at once. */
export class ScriptedAdapter implements ChannelAdapter {
  readonly calls: Call[] = [];
  /** Sends started and not answered yet. */
  readonly open = new Set<Call>();
  auto = false;

  constructor(
    readonly id: ChannelId,
    readonly maxMessageLength = 4096,
  ) {}

  /** The product's own splitter, with the plain-text writer (as iMessage sends). */
  render(markdown: string): OutboundPart[] {
    return renderMarkdown(markdown, { write: writePlain }, this.maxMessageLength);
  }

  /** The product's own notice rendering, as every adapter has it. */
  renderNotice(text: string): OutboundPart[] {
    return renderNotice(text, this.maxMessageLength);
  }

  send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
    return new Promise((resolve, reject) => {
      const call: Call = {
        message,
        signal,
        deliver: () => {
          this.open.delete(call);
          resolve({ messageId: String(this.calls.indexOf(call) + 1) });
        },
        fail: (error) => {
          this.open.delete(call);
          reject(error);
        },
      };
      this.calls.push(call);
      this.open.add(call);
      signal?.addEventListener('abort', () => call.fail(signal.reason as Error));
      if (this.auto) call.deliver();
    });
  }

  texts(to?: string): string[] {
    return this.calls.filter((call) => to === undefined || call.message.to === to).map((c) => c.message.text);
  }
}
