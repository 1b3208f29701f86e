/**
 * A credential probe, described (doctor: docs/cli.md): one read-only authenticated call
 * that proves the credentials a channel or a model provider will use, and the judgement
 * of its answer. Each platform and provider folder writes its own; doctor runs them
 * (src/cli/doctor/http-probe.ts) through the outbound client. Messages never hold a secret.
 */
import { type OutboundRequest, type OutboundResponse, quote } from './outbound.js';

/** A check's verdict: `ok`, `warn` (works, but should change) or `fail` (will not work, or is unsafe). */
export type Verdict = 'ok' | 'warn' | 'fail';

export interface CheckResult {
  /** What was checked, e.g. `hooks.token`, `store`, `channel telegram`. */
  name: string;
  status: Verdict;
  message: string;
  /** More lines, e.g. each problem of an invalid config. */
  details?: string[];
}

export const ok = (name: string, message: string): CheckResult => ({ name, status: 'ok', message });
export const warn = (name: string, message: string): CheckResult => ({ name, status: 'warn', message });
export const fail = (name: string, message: string): CheckResult => ({ name, status: 'fail', message });

/** `say` scrubs the call's secrets from any text taken from the answer. */
export type Judge = (answer: OutboundResponse, say: (text: string) => string) => CheckResult;

export interface ProbeCall {
  request: OutboundRequest;
  /** Strings that must never be shown (tokens, keys, passwords; their URL encodings are added). */
  secrets: (string | undefined)[];
  judge: Judge;
}

/** `HTTP 401: <the service's message, else a slice of the body>`. */
export function statusDetail(
  answer: OutboundResponse,
  message: string | undefined,
  say: (text: string) => string,
): string {
  const detail = message ?? (quote(answer.raw, 120) || answer.statusText);
  return say(`HTTP ${answer.status}${detail ? `: ${detail}` : ''}`);
}

/** 401/403: the named credential is refused (fail); 429/5xx: up but not now (warn); anything else: fail. */
export function refused(
  name: string,
  answer: OutboundResponse,
  say: (text: string) => string,
  message: string | undefined,
  credential: string,
): CheckResult {
  const detail = statusDetail(answer, message, say);
  if (answer.status === 401 || answer.status === 403)
    return fail(name, `${credential} is refused: ${detail}`);
  if (answer.status === 429 || answer.status >= 500) return warn(name, `answers, but not now: ${detail}`);
  return fail(name, detail);
}

/** A non-empty string from an answer, else undefined. */
export function str(value: unknown): string | undefined {
  return typeof value === 'string' && value ? value : undefined;
}
