/**
 * Route schemas in zod (through fastify-type-provider-zod's `ZodTypeProvider`,
 * which types `request.params` and `request.query` from them). The provider's
 * own validator compiler answers with its own error type; this one answers a
 * refused value the way the handlers always did, 400 `invalid_payload` naming
 * the field in the gateway's JSON error shape (docs/operating.md, "Admin error codes"), so
 * the error handler needs no special case.
 */
import type { FastifySchemaCompiler } from 'fastify';
import type { ZodType } from 'zod';
import { invalidPayload } from '../http/errors.js';

export const zodValidatorCompiler: FastifySchemaCompiler<ZodType> =
  ({ schema }) =>
  (data) => {
    const result = schema.safeParse(data);
    if (result.success) return { value: result.data };
    const issue = result.error.issues[0];
    // A strict object's unknown field is named itself, not its object.
    if (issue?.code === 'unrecognized_keys') {
      return { error: invalidPayload([...issue.path, issue.keys[0]].join('.'), 'is not a known field') };
    }
    return { error: invalidPayload(issue?.path.join('.') || 'request', issue?.message ?? 'invalid') };
  };
