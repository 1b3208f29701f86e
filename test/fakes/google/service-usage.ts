/**
 * The Service Usage API calls setup makes to enable the Gmail and Pub/Sub APIs (Service
 * Usage REST reference: services.enable, services.get, operations.get).
 *
 * `POST /v1/projects/{p}/services/{s}:enable` → a long-running Operation (done at once,
 * or — with `slowEnable` — only when polled at `GET /v1/operations/{id}`); already enabled
 * → `operations/noop.DONE_OPERATION`; `GET /v1/projects/{p}/services/{s}`. Enabled
 * services land in `enabledServices` as `projects/{p}/services/{s}`.
 */
import { randomBytes } from 'node:crypto';
import { HttpError } from './errors.js';
import type { GoogleState } from './state.js';

type Operation = { project: string; service: string; done: boolean };

export function services(
  state: GoogleState,
  method: string,
  project: string,
  service: string,
  verb: string | undefined,
): unknown {
  if (!/\.googleapis\.com$/.test(service)) {
    throw new HttpError(403, `Not found or permission denied for service(s): ${service}.`);
  }
  if (verb === undefined && method === 'GET') return serviceResource(state, project, service);
  if (verb === 'enable' && method === 'POST') {
    const key = `projects/${project}/services/${service}`;
    if (state.enabledServices.has(key)) {
      return operationBody(state, 'operations/noop.DONE_OPERATION', { project, service, done: true });
    }
    const name = `operations/acf.p2-123456789012-${randomBytes(8).toString('hex')}`;
    const op = { project, service, done: !state.slowEnable };
    state.operations.set(name, op);
    if (op.done) state.enabledServices.add(key);
    return operationBody(state, name, op);
  }
  throw new HttpError(404, 'Not Found');
}

export function operation(state: GoogleState, name: string): unknown {
  const op = state.operations.get(name);
  if (!op) throw new HttpError(404, `Operation ${name} not found.`);
  // A slow enable finishes the first time someone looks.
  op.done = true;
  state.enabledServices.add(`projects/${op.project}/services/${op.service}`);
  return operationBody(state, name, op);
}

/** Google names the project by number in the resource, whatever id the request used. */
const serviceResource = (state: GoogleState, project: string, service: string) => ({
  name: `projects/123456789012/services/${service}`,
  config: { name: service },
  state: state.enabledServices.has(`projects/${project}/services/${service}`) ? 'ENABLED' : 'DISABLED',
  parent: 'projects/123456789012',
});

function operationBody(state: GoogleState, name: string, op: Operation) {
  if (!op.done) return { name, metadata: { '@type': 'type.googleapis.com/google.protobuf.Empty' } };
  return {
    name,
    done: true,
    response: {
      '@type': 'type.googleapis.com/google.api.serviceusage.v1.EnableServiceResponse',
      service: serviceResource(state, op.project, op.service),
    },
  };
}
