/** Slack, whole: docs/platforms.md; its sending in send.ts. */

import { slackEscape, writeSlack } from '../../format/slack.js';
import { createAdapter } from '../../kit/adapter.js';
import { definePlatform } from '../../kit/descriptor.js';
import type { AdapterOptions } from '../../kit/types.js';
import { type SlackConfig, slackConfig } from './config.js';
import { slackProbe } from './probe.js';
import { slackRecipients } from './recipients.js';
import { SLACK_TEXT_LIMIT, slackPlatform } from './send.js';

export { SLACK_TEXT_LIMIT } from './send.js';
/** Slack's escaping of `&`, `<` and `>` (format/slack.ts), for callers sending text of their own. */
export { slackEscape };

export const slack = definePlatform({
  id: 'slack',
  config: slackConfig,
  recipients: slackRecipients,
  maxMessageLength: SLACK_TEXT_LIMIT,
  format: {
    writer: { write: writeSlack },
    // `&`, `<` and `>` escaped even without mrkdwn: `<url|text>` and `<!channel>` are read from any text.
    noticeEscape: slackEscape,
  },
  platform: slackPlatform,
  probe: slackProbe,
});

export function createSlackAdapter(config: SlackConfig, options: AdapterOptions = {}) {
  return createAdapter(slack, config, options);
}
