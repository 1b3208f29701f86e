/** One attempt's sending: the reply rendered for its platform, and the parts not sent yet, in order. */
import type { DeliveryRoute, OutboxItem } from '../../store/types.js';
import type { ChannelAdapter, OutboundPart } from '../types.js';

export interface PartsSent {
  /** Parts the reply renders to (0 when it could not be rendered). */
  parts: number;
  /** Parts sent so far, those of earlier attempts included. */
  sent: number;
  /** What stopped the sending; absent when every part went. */
  error?: unknown;
}

/**
 * Sends the parts after `item.partsSent`, recording the progress after each but the last (the
 * delivery's end records that). The same reply always renders to the same parts, so a resumed
 * delivery skips those sent. A reply that cannot be rendered fails like a send and never stalls
 * the outbox. An alert is an operator notice, not a Markdown reply: plain, literal, without link
 * previews (docs/alerts.md, "How it is sent").
 */
export async function sendRemainingParts(
  item: OutboxItem,
  route: DeliveryRoute,
  adapter: ChannelAdapter,
  signal: AbortSignal,
  markPartsSent: (sent: number) => Promise<void>,
): Promise<PartsSent> {
  let parts: OutboundPart[] = [];
  let sent = item.partsSent;
  try {
    parts = item.kind === 'alert' ? adapter.renderNotice(item.text) : adapter.render(item.text);
    while (sent < parts.length) {
      await adapter.send({ ...(parts[sent] as OutboundPart), to: route.to }, signal);
      sent++;
      if (sent < parts.length) await markPartsSent(sent);
    }
    return { parts: parts.length, sent };
  } catch (error) {
    return { parts: parts.length, sent, error };
  }
}
