/**
 * A platform's adapter for its configured section: its descriptor's formatting for
 * rendering, its sending through an outbound client of its own (sender.ts).
 */
import type { z } from 'zod';
import { createOutboundClient } from '../../http/outbound.js';
import { renderMarkdown } from '../format/index.js';
import { renderNotice } from '../format/notice.js';
import type { PlatformDescriptor } from './descriptor.js';
import { sendMessage } from './sender.js';
import type { AdapterOptions, ChannelAdapter } from './types.js';

export function createAdapter<Id extends string, Schema extends z.ZodType>(
  descriptor: PlatformDescriptor<Id, Schema, unknown>,
  config: z.output<Schema>,
  options: AdapterOptions = {},
): ChannelAdapter<Id> {
  const { id, maxMessageLength: limit, format } = descriptor;
  const platform = descriptor.platform(config);
  const client = createOutboundClient({
    label: id,
    secrets: platform.secrets,
    redact: platform.redact,
    timeoutMs: options.timeoutMs,
    fetch: options.fetch,
  });
  return {
    id,
    maxMessageLength: limit,
    render: (markdown) => renderMarkdown(markdown, format.writer, limit),
    renderNotice: (text) => renderNotice(text, limit, format.noticeEscape),
    send: (message, signal) => sendMessage(platform, client, message, signal),
  };
}
