/** `channels.imessage` (docs/platforms.md): the BlueBubbles server and its password. */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';

export const imessageConfig = z.strictObject({ serverUrl: nonEmpty, password: nonEmpty });
export type IMessageConfig = z.output<typeof imessageConfig>;
