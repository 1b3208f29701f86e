// The top self-time functions of a V8 .cpuprofile (node --cpu-prof), for the
// drain benchmark's report: where a gateway's workers spend their CPU.
import { readFileSync } from 'node:fs';

/** [{ name, where, selfMs, share }] of the `limit` functions with the most self time. */
export function topSelfTime(path, limit = 15) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map();
  // timeDeltas[i] is the time before samples[i]; it is charged to that sample's node.
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const totals = new Map();
  let all = 0;
  for (const [id, us] of selfUs) {
    const { callFrame } = byId.get(id);
    const file = callFrame.url.replace(/^file:\/\//, '').replace(/^.*\/(dist|node_modules)\//, '$1/');
    const where = file ? `${file}:${callFrame.lineNumber + 1}` : '';
    const key = `${callFrame.functionName || '(anonymous)'}\t${where}`;
    totals.set(key, (totals.get(key) ?? 0) + us);
    all += us;
  }
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([key, us]) => {
      const [name, where] = key.split('\t');
      return { name, where, selfMs: us / 1000, share: us / all };
    });
}
