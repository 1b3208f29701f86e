/**
 * How a provider reports that its caller gave up. The caller aborted the signal and
 * decides what that means (timed_out, or the gateway stopping), so a provider must
 * rethrow the caller's reason untouched rather than wrap it in a ProviderError.
 */

/** The error to throw for an aborted signal: its reason, or a plain `AbortError`. */
export function abortReason(signal: AbortSignal): unknown {
  if (signal.reason !== undefined) return signal.reason;
  const error = new Error('The operation was aborted');
  error.name = 'AbortError';
  return error;
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortReason(signal);
}
