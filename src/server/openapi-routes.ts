/**
 * The routes of the OpenAPI document (openapi.ts), recorded as the app adds them,
 * and @fastify/swagger loaded only when the document is first asked for
 * (docs/performance.md, "Start-up and idle memory"): the plugin and the yaml and
 * JSON-schema modules it requires are about 100 modules that most gateways never
 * use.
 *
 * The recorder is registered where the plugin used to be, as a plugin that does
 * not encapsulate (as @fastify/swagger is), and adds the same hooks: `onRoute`
 * keeps every route's options, `onRegister` every child scope (for their shared
 * schemas). On first use the plugin is given a stand-in for the app that takes
 * its hooks and its decorator, and the recorded routes and scopes are replayed to
 * it in order, so it builds the document it would have built from the start.
 */
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifyInstance, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyInstance {
    /** The OpenAPI document (openapi.ts), built on the first call and then kept. */
    openApiDocument(): Promise<unknown>;
  }
}

interface Recorded {
  routes: RouteOptions[];
  scopes: FastifyInstance[];
}

export function recordRoutesForOpenApi(
  app: FastifyInstance,
  swaggerOptions: () => Promise<FastifyDynamicSwaggerOptions>,
): void {
  app.register(
    fp(
      (root, _options, done) => {
        const recorded: Recorded = { routes: [], scopes: [] };
        root.addHook('onRoute', (route) => {
          recorded.routes.push(route);
        });
        root.addHook('onRegister', (scope) => {
          recorded.scopes.push(scope);
        });
        let document: Promise<unknown> | undefined;
        root.decorate('openApiDocument', () => {
          document ??= buildDocument(root, recorded, swaggerOptions);
          return document;
        });
        done();
      },
      { name: 'agentgate-openapi-routes' },
    ),
  );
}

type Hook = (...args: unknown[]) => unknown;

/** Loads @fastify/swagger, replays what was recorded to it, and answers its document. */
async function buildDocument(
  root: FastifyInstance,
  recorded: Recorded,
  swaggerOptions: () => Promise<FastifyDynamicSwaggerOptions>,
): Promise<unknown> {
  const [{ fastifySwagger }, options] = await Promise.all([import('@fastify/swagger'), swaggerOptions()]);
  const hooks = new Map<string, Hook>();
  let swagger: (() => unknown) | undefined;
  const standIn = {
    addHook: (name: string, hook: Hook) => hooks.set(name, hook),
    decorate: (_name: string, value: () => unknown) => {
      swagger = value;
    },
    // Read by its onReady hook: the app's shared schemas.
    getSchemas: () => root.getSchemas(),
  };
  await new Promise<void>((done, fail) =>
    fastifySwagger(standIn as unknown as FastifyInstance, options, (error?: Error) =>
      error ? fail(error) : done(),
    ),
  );
  const hook = (name: string): Hook => {
    const found = hooks.get(name);
    if (!found) throw new Error(`@fastify/swagger added no ${name} hook`);
    return found;
  };
  for (const route of recorded.routes) hook('onRoute')(route);
  for (const scope of recorded.scopes) await hook('onRegister')(scope);
  await new Promise<void>((done) => hook('onReady')(done));
  if (!swagger) throw new Error('@fastify/swagger decorated nothing');
  return swagger();
}
