/**
 * Doctor's line for the alert route (docs/alerts.md, "doctor"): alerts off, or where they go —
 * the channel must be configured and the recipient one that channel can parse
 * (channels/recipients.ts), else every alert would fail to deliver, and an alert that fails
 * raises no alert: nobody would be told.
 */
import { recipientProblem } from '../../channels/recipients.js';
import type { ConfigSource } from './config-source.js';
import { type CheckResult, fail, ok } from './types.js';

const NAME = 'alerts';

export function alertsCheck(source: ConfigSource): CheckResult | undefined {
  // A config the schema refuses is the config check's to report.
  const raw = source.raw;
  if (!raw) return undefined;
  const alerts = raw.alerts;
  if (!alerts)
    return ok(NAME, 'off: failures send no message (set alerts to be told of them: docs/alerts.md)');
  if (!raw.channels[alerts.channel]) {
    return fail(
      NAME,
      `alerts.channel is ${alerts.channel}, but channels.${alerts.channel} is not configured: no alert can be sent`,
    );
  }
  const problem = recipientProblem(alerts.channel, alerts.to);
  if (problem) return fail(NAME, `alerts.to: ${problem}; no alert can be delivered`);
  return ok(
    NAME,
    `to ${alerts.channel} ${alerts.to} on ${alerts.on.join(', ')}; at most ${alerts.maxPerHour} an hour, then one summary`,
  );
}
