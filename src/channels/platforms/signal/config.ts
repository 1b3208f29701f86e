/** `channels.signal` (docs/platforms.md): signal-cli's JSON-RPC endpoint and the account. */
import { z } from 'zod';
import { nonEmpty } from '../../../util/config-fields.js';

export const signalConfig = z.strictObject({ rpcUrl: nonEmpty, account: nonEmpty });
export type SignalConfig = z.output<typeof signalConfig>;
