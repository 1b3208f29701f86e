/**
 * The operator commands' HTTP client for a running gateway: the admin API with
 * `Authorization: Bearer <gateway.auth.token>`, the hooks with the hook token.
 * Tokens travel only in headers (never in a URL) and are scrubbed from every
 * message, through the project's outbound client.
 */
import type { ResolvedConfig } from '../config/resolved.js';
import { createOutboundClient, type OutboundClient, OutboundError } from '../http/outbound.js';
import { CliError } from './cli-error.js';
import type { GatewayTarget } from './gateway-target.js';

/** Plenty for any admin answer from a local gateway; waits (`--wait`) set their own. */
const DEFAULT_TIMEOUT_MS = 15_000;

export type Credential = 'admin' | 'hook' | 'none';

export interface GatewayAnswer {
  status: number;
  /** The body parsed as a JSON object; undefined when it is not one. */
  json: Record<string, unknown> | undefined;
  raw: string;
  headers: Headers;
}

export interface GatewayRequest {
  method?: 'GET' | 'POST';
  path: string;
  auth: Credential;
  json?: unknown;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export class GatewayClient {
  private readonly http: OutboundClient;

  constructor(
    readonly baseUrl: string,
    private readonly config: ResolvedConfig,
  ) {
    this.http = createOutboundClient({
      label: 'agentgate',
      secrets: [config.gateway.auth.token, config.hooks.token],
      timeoutMs: DEFAULT_TIMEOUT_MS,
    });
  }

  static of(target: GatewayTarget): GatewayClient {
    return new GatewayClient(target.baseUrl, target.config);
  }

  get hooksPath(): string {
    return this.config.hooks.path;
  }

  get hasAdminToken(): boolean {
    return !!this.config.gateway.auth.token;
  }

  /** Sends a request and returns the answer whatever its status; unreachable → CliError. */
  async request(request: GatewayRequest): Promise<GatewayAnswer> {
    const headers: Record<string, string> = { accept: 'application/json', ...request.headers };
    if (request.auth === 'admin') headers.authorization = `Bearer ${this.adminToken()}`;
    if (request.auth === 'hook') headers.authorization = `Bearer ${this.hookToken()}`;
    try {
      const answer = await this.http.send({
        method: request.method ?? (request.json === undefined ? 'GET' : 'POST'),
        url: `${this.baseUrl}${request.path}`,
        headers,
        json: request.json,
        timeoutMs: request.timeoutMs,
      });
      return { status: answer.status, json: answer.json, raw: answer.raw, headers: answer.headers };
    } catch (error) {
      if (error instanceof OutboundError) throw new CliError(this.unreachable(error));
      throw error;
    }
  }

  /** `request`, then the JSON body of a 2xx answer; an error answer becomes a CliError with its sentence. */
  async expectOk(request: GatewayRequest): Promise<Record<string, unknown>> {
    const answer = await this.request(request);
    if (answer.status >= 200 && answer.status < 300 && answer.json) return answer.json;
    throw new CliError(describeError(answer, `${request.method ?? 'GET'} ${request.path}`));
  }

  private adminToken(): string {
    const token = this.config.gateway.auth.token;
    if (!token) {
      throw new CliError(
        `gateway.auth.token is not set in ${this.config.configPath}: the admin API is disabled, so this command cannot ask the gateway`,
      );
    }
    return token;
  }

  private hookToken(): string {
    const token = this.config.hooks.token;
    if (!this.config.hooks.enabled || !token) {
      throw new CliError(`hooks are not enabled in ${this.config.configPath} (hooks.enabled, hooks.token)`);
    }
    return token;
  }

  private unreachable(error: OutboundError): string {
    const why =
      error.failure === 'timeout'
        ? `no answer within ${(error.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000} s`
        : describeCode(error.code);
    return `cannot reach the gateway at ${this.baseUrl}: ${why} — is \`agentgate run\` running?`;
  }
}

/** The gateway's error sentence and code (docs/endpoints.md), else the status and a slice of the body. */
export function describeError(answer: GatewayAnswer, what: string): string {
  const { json } = answer;
  const text = (value: unknown) => (typeof value === 'string' && value ? value : undefined);
  // The gateway's shape is {error: <sentence>, code}; one shaped {error: <code>, message: <sentence>}
  // reads as well.
  const sentence = text(json?.message) ?? text(json?.error);
  const code = text(json?.code) ?? (text(json?.message) ? text(json?.error) : undefined);
  if (sentence && code) return `${sentence} (${code}, HTTP ${answer.status})`;
  if (sentence) return `${sentence} (HTTP ${answer.status})`;
  if (answer.status === 404) {
    return `${what}: HTTP 404 — this gateway does not serve that endpoint (an older version?)`;
  }
  return `${what}: HTTP ${answer.status} ${answer.raw.replace(/\s+/g, ' ').slice(0, 200)}`;
}

const CODE_SENTENCES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_SOCKET: 'the connection closed',
};

function describeCode(code: string | undefined): string {
  if (!code) return 'network error';
  return CODE_SENTENCES[code] ?? code;
}
