/**
 * A view of a store part whose every method first waits for the store to be
 * ready (connected, schema migrated), so a PostgreSQL store can be used as soon
 * as it is constructed — the first call fails with the start's error (naming
 * `store.url`) when the database could not be reached.
 */
export function afterReady<T extends object>(ready: Promise<void>, part: T): T {
  const view: Record<string, unknown> = {};
  const methods = Object.getOwnPropertyNames(Object.getPrototypeOf(part)).filter(
    (name) => name !== 'constructor' && typeof (part as Record<string, unknown>)[name] === 'function',
  );
  for (const name of methods) {
    const method = (part as Record<string, (...args: unknown[]) => unknown>)[name] as (
      ...args: unknown[]
    ) => unknown;
    view[name] = async (...args: unknown[]) => {
      await ready;
      return method.apply(part, args);
    };
  }
  return view as T;
}
