// Fallback load generator for machines where wrk cannot be installed. It runs in
// this Node process and competes with the server for CPU, so its figures are
// noisier and lower than wrk's and must not be compared with them.
import autocannon from 'autocannon';
import { fillBody, requestId } from './bodies.mjs';

export async function runAutocannon({ url, path, seconds, connections, token, tag, parts }) {
  let n = 0;
  const r = await autocannon({
    url: `${url}${path}`,
    connections,
    duration: seconds,
    pipelining: 1,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        setupRequest: (request) => ({ ...request, body: fillBody(parts, requestId(tag, 1, ++n)) }),
      },
    ],
  });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok: r['2xx'],
    other: r.non2xx + r.errors + r.timeouts,
    sent: r.requests.sent,
  };
}
