/** `channels.msteams` (docs/platforms.md): the bot's app, its tenant and the Connector. */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';

export const msteamsConfig = z.strictObject({
  appId: nonEmpty,
  appPassword: nonEmpty,
  tenantId: nonEmpty.optional(),
  tokenUrl: nonEmpty.optional(),
  serviceUrl: nonEmpty,
});
export type MsTeamsConfig = z.output<typeof msteamsConfig>;
