/**
 * Doctor's probe of an HTTP provider: its models list, asked with the configured key,
 * lists the models the config names (docs/cli.md).
 */
import type { OutboundResponse } from '../../../http/outbound.js';
import { type CheckResult, fail, ok, type ProbeCall, statusDetail, warn } from '../../../http/probe.js';
import type { ProviderProbeContext } from './descriptor.js';
import { nestedErrorMessage } from './http-json.js';

/** `GET url` with `headers`; `hasKey`: an API key is configured (the messages say which case it is). */
export function modelsListProbe(
  url: string,
  headers: Record<string, string>,
  secrets: (string | undefined)[],
  hasKey: boolean,
  { name, wanted }: ProviderProbeContext,
): ProbeCall {
  return {
    request: { url, headers },
    secrets,
    judge: (answer, say) => judgeModels(name, answer, say, wanted, hasKey),
  };
}

function judgeModels(
  name: string,
  answer: OutboundResponse,
  say: (text: string) => string,
  wanted: string[],
  hasKey: boolean,
): CheckResult {
  const detail = () => statusDetail(answer, nestedErrorMessage(answer.json), say);
  if (answer.status === 401 || answer.status === 403) {
    return fail(
      name,
      `the ${hasKey ? 'API key is refused' : 'server wants an API key (apiKey is not set)'}: ${detail()}`,
    );
  }
  if (answer.status === 404) {
    return warn(
      name,
      `no models list at this baseUrl (${detail()}); the key could not be checked — is baseUrl right?`,
    );
  }
  if (answer.status === 429 || answer.status >= 500) return warn(name, `answers, but not now: ${detail()}`);
  if (answer.status !== 200) return fail(name, detail());
  const data = answer.json?.data;
  const ids = Array.isArray(data)
    ? data.flatMap((model) => (typeof model?.id === 'string' ? [model.id as string] : []))
    : [];
  const missing = wanted.filter((model) => !ids.includes(model));
  if (ids.length > 0 && missing.length > 0) {
    return warn(
      name,
      say(`key accepted; ${ids.length} models, but not ${missing.join(', ')} named in the config`),
    );
  }
  return ok(name, `${hasKey ? 'key accepted' : 'answers (no apiKey set)'}; ${ids.length} model(s) listed`);
}
