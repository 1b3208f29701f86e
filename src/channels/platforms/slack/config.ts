/** `channels.slack` (docs/platforms.md): the app's bot token. */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';

export const slackConfig = z.strictObject({
  botToken: nonEmpty,
  apiBaseUrl: nonEmpty.default('https://slack.com/api'),
});
export type SlackConfig = z.output<typeof slackConfig>;
