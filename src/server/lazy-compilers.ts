/**
 * Fastify's default schema compilers (ajv for validation, fast-json-stringify for
 * answers), loaded on first use instead of when the app is created
 * (docs/performance.md, "Start-up and idle memory"). Fastify requires both when
 * it builds an app, about 110 modules; no route of the gateway uses them: every
 * route with a schema sets the zod compilers of its scope (admin-routes.ts), so
 * the gateway normally never loads them at all. (Given as a factory, Fastify
 * treats them as custom compilers: it would no longer lower-case the keys of a
 * `headers` schema for them; no route has one.)
 *
 * They are resolved from Fastify's own folder, as Fastify resolves them, so the
 * versions are the ones it was built with.
 */
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>;
/** The shape both selectors return: (the app's shared schemas, options) → a compiler. */
type Builder = (externalSchemas: unknown, options: unknown) => unknown;

const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));

/** A builder that requires the selector module `name` (and makes its builder) on its first call. */
function onFirstUse(name: string): Builder {
  let builder: Builder | undefined;
  return (externalSchemas, options) => {
    builder ??= (fromFastify(name) as () => Builder)();
    return builder(externalSchemas, options);
  };
}

/** Fastify's own defaults, each required the first time a route needs it. */
export const lazyCompilers = {
  buildValidator: onFirstUse('@fastify/ajv-compiler'),
  buildSerializer: onFirstUse('@fastify/fast-json-stringify-compiler'),
} as unknown as CompilersFactory;
