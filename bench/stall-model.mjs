// A Chat Completions endpoint on loopback that holds every call until `release()`:
// a gateway whose model is this one, with one worker slot, claims one run and waits,
// so everything else it accepts stays queued. That is how bench/drain.mjs measures
// the accept rate without the workers taking CPU, and builds a backlog to drain.
import { createServer } from 'node:http';

const answer = (res, model) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      id: 'chatcmpl-stall',
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    }),
  );
};

export async function startStallModel() {
  const held = [];
  let released = false;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      let model = 'm';
      try {
        model = JSON.parse(Buffer.concat(chunks).toString('utf8')).model ?? model;
      } catch {}
      if (released) answer(res, model);
      else held.push({ res, model });
    });
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    held: () => held.length,
    /** Answers the held calls and every later one at once. */
    release() {
      released = true;
      for (const { res, model } of held.splice(0)) answer(res, model);
    },
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(done);
      }),
  };
}
