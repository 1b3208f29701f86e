/**
 * The span of one tool call (docs/tracing.md, "What is traced"), named and described by
 * OpenTelemetry's generative-AI conventions: `execute_tool {tool}`, `gen_ai.operation.name`
 * `execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id`; a child of the run's span, like
 * its model calls. The tool's own text stays out of it (it is the tool's data, not ours).
 */
import type { WorkSpan } from '../observability/work-span.js';
import type { ToolOutcome } from '../tools/types.js';

export async function tracedToolCall(
  parent: WorkSpan | undefined,
  tool: string,
  callId: string,
  work: () => Promise<ToolOutcome>,
): Promise<ToolOutcome> {
  if (!parent) return work();
  const span = parent.child(`execute_tool ${tool}`, {
    kind: 'internal',
    attributes: {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': tool,
      'gen_ai.tool.call.id': callId,
    },
  });
  try {
    const outcome = await span.activate(work);
    span.setAttributes({ 'agentgate.tool.status': outcome.status });
    if (outcome.status === 'error') span.fail('the tool call failed', 'tool_error');
    return outcome;
  } catch (error) {
    span.fail(error instanceof Error ? error.message : String(error), errorType(error));
    throw error;
  } finally {
    span.end();
  }
}

function errorType(error: unknown): string {
  return error instanceof Error ? error.name : '_OTHER';
}
