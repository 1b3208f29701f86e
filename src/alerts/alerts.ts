/**
 * Alerts (docs/alerts.md): one short message per failure — a run that failed or timed out, a
 * reply that could not be delivered, a completion callback that failed — to the channel and
 * recipient of `alerts`, read from the current config at the moment of the failure.
 *
 * This builds the messages; the store enqueues each one in the transaction that records its
 * failure (store/rules/alerts.ts: the cap, the hour's summary), and the delivery engine sends it
 * like a reply (retries, the platform's Retry-After), as an operator notice: plain text, no link
 * previews. Every value in it a sender may have chosen (the error, the hook's name, a callback's
 * origin) has its links made inert (inert-links.ts). An alert message that fails raises none.
 */
import type { AlertsConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { AlertStatus } from '../metrics/gateway-metrics.js';
import type {
  AdminStore,
  AlertCounts,
  AlertEvent,
  AlertOutcome,
  AlertSummaryText,
  CallbackItem,
  NewAlert,
  OutboxItem,
} from '../store/types.js';
import { inertLinks } from './inert-links.js';

/** Longest error line quoted in an alert (characters). */
export const ALERT_ERROR_MAX_CHARS = 200;

export interface AlertsDeps {
  /** The current `alerts` section (a config reload may change it); undefined when alerts are off. */
  config: () => AlertsConfig | undefined;
  /** Where a run's hook (its source) is read, for the alerts of deliveries and callbacks. */
  store: { admin: Pick<AdminStore, 'getStoredRun'> };
  log: Logger;
  /** Counts alerts by status (agentgate_alerts_total). */
  metrics?: { alertCounted(status: AlertStatus, count?: number): void };
}

/** A budget spent for its window, as a budget.exceeded alert names it. */
export interface ExceededBudget {
  id: string;
  scope: string;
  window: 'hour' | 'day';
  limit: { usd?: number; tokens?: number };
  spent: { usd: number; tokens: number };
  resetsAt: number;
}

/** The run a run.failed (or approval.requested) alert is about. */
export interface FailedRun {
  id: string;
  source: string;
  name: string | null;
}

export class Alerts {
  constructor(private readonly deps: AlertsDeps) {}

  /** The alert of a run that ended failed or timed out; undefined when alerts are off for it. */
  forRun(run: FailedRun, status: 'failed' | 'timed_out', error: string | null): NewAlert | undefined {
    const what = status === 'timed_out' ? 'timed out' : 'failed';
    return this.alert('run.failed', run.id, `run ${run.id} (${hookOf(run)}) ${what}`, error);
  }

  /**
   * The approval request of a tool call that waits for an operator's decision (docs/alerts.md):
   * the run, its hook, the tool and its arguments (cut, links made inert: the model chose them).
   */
  forApproval(run: FailedRun, tool: string, args: Record<string, unknown>): NewAlert | undefined {
    const subject = `run ${run.id} (${hookOf(run)}) waits for approval to call ${inertLinks(tool)}`;
    const alert = this.alert('approval.requested', run.id, subject, cut(JSON.stringify(args)));
    return (
      alert && { ...alert, text: `${alert.text}; approve or deny: agentgate runs approve|deny ${run.id}` }
    );
  }

  /**
   * The alert of a budget spent for its window (docs/budgets.md): its id, scope, spend and limit,
   * and when it resets. Every value is the operator's or the gateway's own.
   */
  forBudget(budget: ExceededBudget): NewAlert | undefined {
    const { limit, spent } = budget;
    const amounts = [
      ...(limit.usd !== undefined ? [`$${round(spent.usd)} of $${limit.usd}`] : []),
      ...(limit.tokens !== undefined ? [`${spent.tokens} of ${limit.tokens} tokens`] : []),
    ].join(', ');
    const subject =
      `budget ${budget.id} (${budget.scope}) is spent for this ${budget.window}: ${amounts}; ` +
      `new requests in it get 429 and its queued runs wait until ${new Date(budget.resetsAt).toISOString()}`;
    return this.alert('budget.exceeded', budget.id, subject, null);
  }

  /** The alert of a reply whose delivery ended failed; never one for an alert message. */
  async forDelivery(
    item: OutboxItem,
    channel: string | null,
    reason: string | null,
  ): Promise<NewAlert | undefined> {
    if (item.kind === 'alert' || !this.on('delivery.failed')) return undefined;
    const to = channel ? ` to ${inertLinks(channel)}` : '';
    const subject =
      item.kind === 'run'
        ? `the reply of run ${item.refId} (${await this.hookOfRun(item.refId)}) was not delivered${to}`
        : `the reply of heartbeat ${item.refId} (${inertLinks(item.mainSessionKey)}) was not delivered${to}`;
    return this.alert('delivery.failed', item.refId, subject, reason);
  }

  /** The alert of a completion callback that ended failed. */
  async forCallback(item: CallbackItem, error: string | null): Promise<NewAlert | undefined> {
    if (!this.on('callback.failed')) return undefined;
    const subject = `the completion callback of run ${item.runId} (${await this.hookOfRun(item.runId)}) to ${inertLinks(originOf(item.url))} failed`;
    return this.alert('callback.failed', item.runId, subject, error);
  }

  /** The hour's summary of suppressed alerts, to the current alert route. */
  readonly summary: AlertSummaryText = (counts, total) => {
    const config = this.deps.config() as AlertsConfig;
    return { channel: config.channel, to: config.to, text: summaryText(counts, total) };
  };

  /** Whether alerts are on at all now (the summary job runs only then). */
  get enabled(): boolean {
    return this.deps.config() !== undefined;
  }

  /** Counts (and logs) what the store made of an alert. */
  recorded(alert: NewAlert, outcome: AlertOutcome | undefined): void {
    if (outcome === undefined) return;
    this.deps.metrics?.alertCounted(outcome);
    const fields = { event: alert.event, refId: alert.refId, channel: alert.channel };
    if (outcome === 'queued') {
      this.deps.log.info(fields, 'alert queued');
    } else
      this.deps.log.warn(
        { ...fields, maxPerHour: alert.maxPerHour },
        'alert suppressed: over alerts.maxPerHour',
      );
  }

  /** A summary was enqueued for `counts`. */
  summarized(counts: AlertCounts): void {
    const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
    this.deps.metrics?.alertCounted('summarized', total);
    this.deps.metrics?.alertCounted('queued');
    this.deps.log.info({ ...counts, total }, 'alert summary queued');
  }

  /** An alert message's delivery ended. */
  delivered(status: 'sent' | 'failed', item: OutboxItem, reason: string | null): void {
    this.deps.metrics?.alertCounted(status);
    if (status === 'sent') this.deps.log.info({ deliveryId: item.id, refId: item.refId }, 'alert sent');
    // Never an alert about an alert: the log and agentgate_alerts_total{status="failed"} say it.
    else
      this.deps.log.error({ deliveryId: item.id, refId: item.refId, reason }, 'alert could not be delivered');
  }

  private on(event: AlertEvent): boolean {
    const config = this.deps.config();
    return config?.on.includes(event) === true;
  }

  private alert(
    event: AlertEvent,
    refId: string,
    subject: string,
    error: string | null,
  ): NewAlert | undefined {
    const config = this.deps.config();
    if (!config?.on.includes(event)) return undefined;
    const line = firstLine(error);
    const text = `⚠️ agentgate: ${subject}${line ? `: ${inertLinks(line)}` : ''}`;
    return { event, refId, channel: config.channel, to: config.to, text, maxPerHour: config.maxPerHour };
  }

  private async hookOfRun(runId: string): Promise<string> {
    try {
      const stored = await this.deps.store.admin.getStoredRun(runId);
      return stored ? hookOf(stored.run) : 'unknown hook';
    } catch {
      return 'unknown hook';
    }
  }
}

/** The first non-empty line of an error, cut at ALERT_ERROR_MAX_CHARS. */
export function firstLine(error: string | null): string {
  const line = (error ?? '').split(/\r?\n/).find((l) => l.trim() !== '') ?? '';
  return cut(line.trim());
}

const cut = (text: string) =>
  text.length > ALERT_ERROR_MAX_CHARS ? `${text.slice(0, ALERT_ERROR_MAX_CHARS - 1)}…` : text;

/** "12 more failures in the last hour: 10 run.failed, 2 delivery.failed; see …" */
export function summaryText(counts: AlertCounts, total: number): string {
  const kinds = (Object.entries(counts) as [AlertEvent, number][])
    .filter(([, n]) => n > 0)
    .map(([event, n]) => `${n} ${event}`)
    .join(', ');
  const failures = total === 1 ? 'failure' : 'failures';
  return `⚠️ agentgate: ${total} more ${failures} in the last hour (over alerts.maxPerHour, not sent one by one): ${kinds}; see the dashboard's Failures view`;
}

/** Dollars to the cent, or to four decimals under a cent. */
const round = (usd: number): string => (usd >= 0.01 ? usd.toFixed(2) : usd.toFixed(4));

const hookOf = (run: { source: string; name?: string | null }) =>
  inertLinks(run.name ? `${run.source}, ${run.name}` : run.source);

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'an invalid URL';
  }
}
