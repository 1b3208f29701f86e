/**
 * Google's JSON error body, `{error: {code, message, status}}`, where `status` is the
 * canonical code's name (Google Cloud APIs' error model, AIP-193). The Gmail, Pub/Sub and
 * Service Usage APIs all answer in it; the OAuth token endpoint does not (oauth.ts).
 */

/** The canonical status name Google pairs with each HTTP status the fake sends. */
export const REASONS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

/** Thrown inside handlers; the router turns it into Google's error body. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason = REASONS[status] ?? 'UNKNOWN',
  ) {
    super(message);
  }
}

export function errorBody(status: number, message: string, reason = REASONS[status] ?? 'UNKNOWN') {
  return { error: { code: status, message, status: reason } };
}
