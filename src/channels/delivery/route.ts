/**
 * Where a reply goes (docs/agent-runs.md, "Delivery"): fixed once per reply. `last` is the main
 * session's last route, else the first configured channel; `to` defaults to the route's recipient.
 */
import { CHANNEL_IDS, type ChannelId, type ChannelsConfig } from '../../config/schema.js';
import type { DeliveryRecord, DeliveryRoute, OutboxItem } from '../../store/types.js';
import type { ChannelAdapter } from '../types.js';

/** A route and the adapter that sends on it, or the record that ends the delivery without sending. */
export type Resolution = { route: DeliveryRoute; adapter: ChannelAdapter } | { record: DeliveryRecord };

/** The reply's route: its own when fixed already, else from its `channel`/`to` and the session's last route. */
export function resolveRoute(
  item: OutboxItem,
  last: DeliveryRoute | undefined,
  channels: ChannelsConfig,
  adapters: ReadonlyMap<ChannelId, ChannelAdapter>,
): Resolution {
  let route = item.resolved;
  if (!route) {
    const chosen = chooseRoute(item, last, channels);
    if ('record' in chosen) return chosen;
    route = chosen.route;
  }
  const adapter = adapters.get(route.channel as ChannelId);
  if (!adapter) {
    return { record: { status: 'failed', ...routeOf(route), reason: `${route.channel} is not configured` } };
  }
  return { route, adapter };
}

function chooseRoute(
  item: OutboxItem,
  last: DeliveryRoute | undefined,
  channels: ChannelsConfig,
): { route: DeliveryRoute } | { record: DeliveryRecord } {
  let channel: string | undefined = item.channel;
  let to = item.to;
  if (channel === 'last') {
    channel = last?.channel ?? CHANNEL_IDS.find((id) => channels[id] !== undefined);
    if (last && channel === last.channel) to ??= last.to;
  } else if (last?.channel === channel) {
    to ??= last.to;
  }
  if (channel === undefined) return { record: skipped(null, to, 'no channel is configured') };
  if (!to) {
    const reason = `no recipient for ${channel}: pass "to", or deliver once with one to set the last route`;
    return { record: skipped(channel, null, reason) };
  }
  return { route: { channel, to } };
}

/** Where the route comes from the session's last route: `channel: "last"`, or no `to`. */
export const dependsOnLastRoute = (item: OutboxItem) => item.channel === 'last' || item.to === null;
/** One recipient on one platform: its replies go one at a time, in order. */
export const laneOf = (route: DeliveryRoute) => `${route.channel}\u0000${route.to}`;
export const routeOf = (route: DeliveryRoute) => ({ channel: route.channel, to: route.to });
const skipped = (channel: string | null, to: string | null, reason: string): DeliveryRecord => ({
  status: 'skipped',
  channel,
  to,
  reason,
});
