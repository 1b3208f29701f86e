/** How a delivery's end is told: its log line, its metric, and an alert message's own outcome. */
import type { Logger } from '../../log.js';
import type { GatewayMetrics } from '../../metrics/gateway-metrics.js';
import type { AlertOutcome, DeliveryRecord, NewAlert, OutboxItem } from '../../store/types.js';

/** What the engine asks of alerts (alerts/alerts.ts). */
export interface DeliveryAlerts {
  /** The alert of a reply whose delivery ended failed; undefined when alerts are off for it. */
  forDelivery(item: OutboxItem, channel: string | null, reason: string | null): Promise<NewAlert | undefined>;
  recorded(alert: NewAlert, outcome: AlertOutcome | undefined): void;
  /** An alert message's own delivery ended. */
  delivered(status: 'sent' | 'failed', item: OutboxItem, reason: string | null): void;
}

export interface DeliveryReporting {
  log: Logger;
  metrics?: Pick<GatewayMetrics, 'deliveryFinished'>;
  alerts?: DeliveryAlerts;
}

/** Counts and logs how a delivery ended; a skip is neither counted nor a warning. */
export function reportFinished(
  { log, metrics, alerts }: DeliveryReporting,
  item: OutboxItem,
  record: DeliveryRecord,
  attempts: number | undefined,
): void {
  const fields = { ...correlation(item), channel: record.channel, attempts, reason: record.reason };
  if (item.kind === 'alert') {
    // Counted as an alert (agentgate_alerts_total), not as a reply.
    if (record.status !== 'skipped')
      alerts?.delivered(record.status === 'delivered' ? 'sent' : 'failed', item, record.reason);
  } else if (record.status === 'delivered') {
    metrics?.deliveryFinished(record.channel as string, 'delivered');
    log.info(fields, 'reply delivered');
  } else if (record.status === 'failed') {
    metrics?.deliveryFinished(record.channel ?? 'unknown', 'failed');
    log.warn(fields, 'delivery failed');
  } else {
    log.info(fields, 'delivery skipped');
  }
}

/** The id that ties a delivery's log lines to its run (or heartbeat) and to the hook request that made it. */
export const correlation = (item: OutboxItem) =>
  item.kind === 'run'
    ? { runId: item.refId, deliveryId: item.id }
    : item.kind === 'alert'
      ? { alertAbout: item.refId, deliveryId: item.id }
      : { heartbeatId: item.refId, deliveryId: item.id };

/** The span attribute naming what a delivery is for: its run, its heartbeat, or the failure an alert reports. */
export const REF_ATTRIBUTE: Record<OutboxItem['kind'], string> = {
  run: 'agentgate.run_id',
  heartbeat: 'agentgate.heartbeat_id',
  alert: 'agentgate.alert_for',
};
