import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, type ErrorCode } from '../../src/http/error-codes.js';
import { HttpError } from '../../src/http/errors.js';

/** Every `| status | `code`, `code` | … |` row of a doc's tables: the codes with their status. */
function documentedStatuses(doc: string): [string, number][] {
  const text = readFileSync(new URL(`../../docs/${doc}`, import.meta.url), 'utf8');
  const rows: [string, number][] = [];
  for (const match of text.matchAll(/^\| (\d{3}) \| ((?:`[a-z_]+`(?:, )?)+) \|/gm)) {
    for (const code of (match[2] ?? '').matchAll(/`([a-z_]+)`/g))
      rows.push([code[1] ?? '', Number(match[1])]);
  }
  return rows;
}

const DOCUMENTED = [...documentedStatuses('errors.md'), ...documentedStatuses('operating.md')];

describe('the error code table', () => {
  it('gives every code the status docs/errors.md and docs/operating.md give it', () => {
    expect(DOCUMENTED.length).toBeGreaterThan(30);
    for (const [code, status] of DOCUMENTED) {
      expect({ code, status: ERROR_STATUS[code as ErrorCode] }).toEqual({ code, status });
    }
  });

  it('has no code the docs do not list, but the catch-all internal_error', () => {
    const documented = new Set(DOCUMENTED.map(([code]) => code));
    const undocumented = Object.keys(ERROR_STATUS).filter((code) => !documented.has(code));
    expect(undocumented).toEqual(['internal_error']);
  });

  it('answers an HttpError with its code’s status', () => {
    const error = new HttpError('idempotency_conflict', 'used');
    expect(error.statusCode).toBe(409);
    expect(error.toJSON()).toEqual({ ok: false, error: 'used', code: 'idempotency_conflict' });
  });
});
