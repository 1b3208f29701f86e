/** `channels.mattermost` (docs/platforms.md): the server and a bot's token. */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';

export const mattermostConfig = z.strictObject({ baseUrl: nonEmpty, token: nonEmpty });
export type MattermostConfig = z.output<typeof mattermostConfig>;
