/** Microsoft Teams (the Bot Framework Connector), whole: docs/platforms.md; its sending in send.ts. */

import { markdownWriter } from '../../format/markdown.js';
import { createAdapter } from '../../kit/adapter.js';
import { definePlatform } from '../../kit/descriptor.js';
import type { AdapterOptions } from '../../kit/types.js';
import { type MsTeamsConfig, msteamsConfig } from './config.js';
import { msteamsProbe } from './probe.js';
import { msteamsRecipients } from './recipients.js';
import { MSTEAMS_TEXT_LIMIT, msteamsPlatform } from './send.js';

export { BOT_FRAMEWORK_SCOPE, MSTEAMS_TEXT_LIMIT } from './send.js';

export const msteams = definePlatform({
  id: 'msteams',
  config: msteamsConfig,
  recipients: msteamsRecipients,
  maxMessageLength: MSTEAMS_TEXT_LIMIT,
  // Notices are sent with `textFormat: "plain"`: Teams reads no Markdown in them, nothing to escape.
  format: { writer: { write: markdownWriter({ headingLevels: 3 }) } },
  platform: msteamsPlatform,
  probe: msteamsProbe,
});

export function createMsTeamsAdapter(config: MsTeamsConfig, options: AdapterOptions = {}) {
  return createAdapter(msteams, config, options);
}
