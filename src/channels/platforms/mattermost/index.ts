/** Mattermost, whole: docs/platforms.md; its sending in send.ts. */

import { escapeMarkdown, markdownWriter } from '../../format/markdown.js';
import { createAdapter } from '../../kit/adapter.js';
import { definePlatform } from '../../kit/descriptor.js';
import type { AdapterOptions } from '../../kit/types.js';
import { type MattermostConfig, mattermostConfig } from './config.js';
import { mattermostProbe } from './probe.js';
import { mattermostRecipients } from './recipients.js';
import { MATTERMOST_TEXT_LIMIT, mattermostPlatform } from './send.js';

export { MATTERMOST_TEXT_LIMIT } from './send.js';

export const mattermost = definePlatform({
  id: 'mattermost',
  config: mattermostConfig,
  recipients: mattermostRecipients,
  maxMessageLength: MATTERMOST_TEXT_LIMIT,
  format: {
    writer: { write: markdownWriter({ headingLevels: 6 }) },
    // Mattermost formats every post: a notice's Markdown characters are escaped, so it shows as written.
    noticeEscape: (char) => escapeMarkdown(char, false),
  },
  platform: mattermostPlatform,
  probe: mattermostProbe,
});

export function createMattermostAdapter(config: MattermostConfig, options: AdapterOptions = {}) {
  return createAdapter(mattermost, config, options);
}
