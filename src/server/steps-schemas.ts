/**
 * The schemas of a run's steps and of an operator's decision (docs/operating.md, "A run's
 * steps" and "Approving tool calls"), for the checks and the OpenAPI document (admin-schemas.ts).
 */
import { z } from 'zod';

const isoTime = z.string().describe('ISO 8601, UTC.');

export const StepView = z.object({
  index: z.number().int().describe('From 0, in the run’s order; model and tool steps share the numbering.'),
  kind: z.enum(['model', 'tool']),
  tool: z.string().optional().describe('A tool step’s `<server>.<tool>`.'),
  arguments: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('A tool step’s arguments, as the model gave them.'),
  result: z
    .string()
    .optional()
    .describe('What the model was given for a tool step; a model step’s own text, when it wrote any.'),
  status: z.enum(['ok', 'error', 'denied']),
  startedAt: isoTime,
  finishedAt: isoTime,
});

export const StepsAnswer = z.object({
  steps: z
    .array(StepView)
    .describe('The steps its loop committed, in order (empty for a run without tools).'),
});

export const APPROVAL_DECISIONS = ['approve', 'deny'] as const;

/** `POST /api/runs/{runId}/approval`'s body. An unknown field is refused. */
export const ApprovalBody = z.strictObject({
  decision: z
    .enum(APPROVAL_DECISIONS, { error: 'must be "approve" or "deny"' })
    .describe('Approve the call the run waits for, or deny it (the model is told it was denied).'),
});
