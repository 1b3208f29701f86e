/** Signal (a signal-cli daemon), whole: docs/platforms.md; its sending in send.ts. */

import { writeSignal } from '../../format/signal.js';
import { createAdapter } from '../../kit/adapter.js';
import { definePlatform } from '../../kit/descriptor.js';
import type { AdapterOptions } from '../../kit/types.js';
import { type SignalConfig, signalConfig } from './config.js';
import { signalProbe } from './probe.js';
import { signalRecipients } from './recipients.js';
import { SIGNAL_TEXT_LIMIT, signalPlatform } from './send.js';

export { SIGNAL_TEXT_LIMIT } from './send.js';

export const signal = definePlatform({
  id: 'signal',
  config: signalConfig,
  recipients: signalRecipients,
  maxMessageLength: SIGNAL_TEXT_LIMIT,
  // Notices: no text styles, and no `previewUrl`: signal-cli attaches a link preview only when asked.
  format: { writer: { write: writeSignal } },
  platform: signalPlatform,
  probe: signalProbe,
});

export function createSignalAdapter(config: SignalConfig, options: AdapterOptions = {}) {
  return createAdapter(signal, config, options);
}
