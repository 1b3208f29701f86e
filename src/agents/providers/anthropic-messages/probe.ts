/** Doctor's probe of an `anthropic-messages` provider: `GET {baseUrl}/v1/models` (`x-api-key`, `anthropic-version`). */
import type { ProbeCall } from '../../../http/probe.js';
import type { ProviderProbeContext } from '../kit/descriptor.js';
import { trimSlash } from '../kit/http-json.js';
import { modelsListProbe } from '../kit/models-probe.js';
import { ANTHROPIC_VERSION } from './client.js';
import type { AnthropicMessagesConfig } from './config.js';

export function anthropicMessagesProbe(
  config: AnthropicMessagesConfig,
  context: ProviderProbeContext,
): ProbeCall {
  const headers: Record<string, string> = {
    ...config.headers,
    accept: 'application/json',
    'anthropic-version': ANTHROPIC_VERSION,
  };
  if (config.apiKey) headers['x-api-key'] = config.apiKey;
  const secrets = [config.apiKey, ...Object.values(config.headers ?? {})];
  return modelsListProbe(
    `${trimSlash(config.baseUrl)}/v1/models`,
    headers,
    secrets,
    !!config.apiKey,
    context,
  );
}
