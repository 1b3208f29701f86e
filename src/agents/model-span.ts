/**
 * The CLIENT span of one model call (docs/tracing.md, "What is traced"), named
 * and described by OpenTelemetry's generative-AI conventions: `chat {model}`,
 * `gen_ai.operation.name`, `gen_ai.system` (and its newer name
 * `gen_ai.provider.name`), `gen_ai.request.model`, `gen_ai.response.model` when it
 * answered — each call names its own model, a fallback's too (docs/agent-runs.md,
 * "Fallbacks") —, and when the answer reported
 * its usage (docs/usage.md) `gen_ai.usage.input_tokens` (cached ones included) and
 * `gen_ai.usage.output_tokens`, with the cache counts beside them. The call runs inside it,
 * so its HTTP request carries the span's `traceparent`. A retried call is a span
 * of its own.
 */
import type { WorkSpan } from '../observability/work-span.js';
import type { ResolvedModel } from './models.js';
import { type CompletionResult, ProviderError } from './providers/types.js';

/** `gen_ai.system` by wire format; formats the conventions do not name are `_OTHER`. */
const GEN_AI_SYSTEMS: Readonly<Record<ResolvedModel['api'], string>> = {
  'openai-chat': 'openai',
  'anthropic-messages': 'anthropic',
  command: '_OTHER',
  echo: '_OTHER',
};

export async function tracedModelCall<T extends CompletionResult>(
  parent: WorkSpan,
  resolved: ResolvedModel,
  call: number,
  work: () => Promise<T>,
): Promise<T> {
  const system = GEN_AI_SYSTEMS[resolved.api];
  const span = parent.child(`chat ${resolved.model}`, {
    kind: 'client',
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': system,
      'gen_ai.provider.name': system,
      'gen_ai.request.model': resolved.model,
      'agentgate.provider': resolved.provider.name,
      'agentgate.call': call,
    },
  });
  try {
    const result = await span.activate(work);
    span.setAttributes({ 'gen_ai.response.model': resolved.model });
    if (result.usage) {
      span.setAttributes({
        'gen_ai.usage.input_tokens': result.usage.inputTokens,
        'gen_ai.usage.output_tokens': result.usage.outputTokens,
        'gen_ai.usage.cache_read.input_tokens': result.usage.cacheReadTokens,
        'gen_ai.usage.cache_creation.input_tokens': result.usage.cacheWriteTokens,
      });
    }
    return result;
  } catch (error) {
    span.fail(error instanceof Error ? error.message : String(error), errorType(error));
    throw error;
  } finally {
    span.end();
  }
}

/** `error.type`: the provider's HTTP status when it answered, else the kind of failure. */
function errorType(error: unknown): string {
  if (error instanceof ProviderError)
    return error.status === undefined ? 'ProviderError' : String(error.status);
  return error instanceof Error ? error.name : '_OTHER';
}
