/** Doctor's probe of an `openai-chat` provider: `GET {baseUrl}/models` (Bearer key). */
import type { ProbeCall } from '../../../http/probe.js';
import type { ProviderProbeContext } from '../kit/descriptor.js';
import { trimSlash } from '../kit/http-json.js';
import { modelsListProbe } from '../kit/models-probe.js';
import type { OpenAiChatConfig } from './config.js';

export function openAiChatProbe(config: OpenAiChatConfig, context: ProviderProbeContext): ProbeCall {
  const headers: Record<string, string> = { ...config.headers, accept: 'application/json' };
  if (config.apiKey) headers.authorization = `Bearer ${config.apiKey}`;
  const secrets = [config.apiKey, ...Object.values(config.headers ?? {})];
  return modelsListProbe(`${trimSlash(config.baseUrl)}/models`, headers, secrets, !!config.apiKey, context);
}
