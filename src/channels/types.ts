/**
 * The channel types the delivery engine and the gateway use: the kit's (kit/types.ts),
 * with adapters named by the registry's channel ids (platforms/index.ts).
 */
import type { ChannelAdapter as PlatformAdapter } from './kit/types.js';
import type { ChannelId } from './platforms/index.js';

export {
  type AdapterOptions,
  type CredentialSource,
  DeliveryError,
  type OutboundMessage,
  type OutboundPart,
  type Platform,
  permanent,
  type SendResult,
  sent,
  type TextStyle,
  temporary,
  type Verdict,
} from './kit/types.js';

export type ChannelAdapter = PlatformAdapter<ChannelId>;
