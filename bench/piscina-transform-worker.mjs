// The Piscina side of bench/transform-pools.mjs and transform-pools-guarantees.mjs.
//
// As a Piscina worker: the same work per call as the gateway's transform worker
// (dist/mappings/transform-worker.js) — the module imported once with the
// gateway's own loader, each call's result checked by validateAction — without
// the call board, which Piscina has no use for.
//
// Imported by the benches: importPiscina(), which says how to install Piscina
// when it is missing (it is not a dependency of agentgate).
import { isMainThread } from 'node:worker_threads';

export async function importPiscina() {
  try {
    const { Piscina, version } = await import('piscina');
    return { Piscina, version };
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    console.error('piscina is not installed: npm install --no-save piscina@5.3.2');
    process.exit(2);
  }
}

let transform;
let validateAction;
if (!isMainThread) {
  const { workerData } = await import('piscina');
  const { dist, file, module, exportName } = workerData;
  const { importTransformModule } = await import(`${dist}/mappings/transform-module.js`);
  ({ validateAction } = await import(`${dist}/mappings/transform-action.js`));
  transform = await importTransformModule(file, module, exportName);
}

export default async function run(input) {
  return validateAction(await transform(input));
}
