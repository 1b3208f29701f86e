/** iMessage (a BlueBubbles server), whole: docs/platforms.md; its sending in send.ts. */

import { writePlain } from '../../format/plain.js';
import { createAdapter } from '../../kit/adapter.js';
import { definePlatform } from '../../kit/descriptor.js';
import type { AdapterOptions } from '../../kit/types.js';
import { type IMessageConfig, imessageConfig } from './config.js';
import { imessageProbe } from './probe.js';
import { imessageRecipients } from './recipients.js';
import { IMESSAGE_TEXT_LIMIT, imessagePlatform } from './send.js';

export { IMESSAGE_TEXT_LIMIT } from './send.js';

export const imessage = definePlatform({
  id: 'imessage',
  config: imessageConfig,
  recipients: imessageRecipients,
  maxMessageLength: IMESSAGE_TEXT_LIMIT,
  format: { writer: { write: writePlain } },
  platform: imessagePlatform,
  probe: imessageProbe,
});

export function createIMessageAdapter(config: IMessageConfig, options: AdapterOptions = {}) {
  return createAdapter(imessage, config, options);
}
