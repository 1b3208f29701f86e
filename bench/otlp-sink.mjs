// A local OTLP/HTTP receiver for `npm run bench -- --tracing on`: takes every
// POST to /v1/traces, reads the body and answers 200 with an empty
// ExportTraceServiceResponse, as a collector on the same host would. It counts
// export requests and bytes, so the report can say the gateways did export.
// It decodes nothing: the cost under test is the gateway's, not a receiver's.
import { createServer } from 'node:http';

export async function startOtlpSink() {
  const seen = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on('data', (chunk) => {
      seen.bytes += chunk.length;
    });
    req.on('end', () => {
      seen.requests++;
      const json = String(req.headers['content-type']).includes('json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
      res.end(json ? '{}' : '');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
