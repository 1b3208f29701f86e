// The request bodies of the load benchmark: a realistic ~1 KB webhook text per
// request, with a distinct id in each so wakes never coalesce. A body is kept as
// a template — its parts around the id — so wrk's Lua script can fill in ids
// without parsing JSON.

/** Width of every id, so all bodies have the same size; matches bench/wrk-post.lua. */
export const ID_WIDTH = 23; // <tag: 10>-<thread: 2>-<counter: 9>
export const PLACEHOLDER = '~'.repeat(ID_WIDTH);

export function realisticText(id) {
  const detail = {
    repository: 'acme/payments-service',
    workflow: 'ci.yml',
    run: id,
    conclusion: 'failure',
    branch: 'main',
    commit: { sha: '3f9c2d1e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e', author: 'dev@example.com' },
    failedJobs: ['unit-tests (node 20)', 'integration (postgres)'],
    url: `https://ci.example.com/acme/payments-service/runs/${id}`,
  };
  const text = `CI run ${id} failed on main: ${JSON.stringify(detail)}`;
  return text.padEnd(900, ' .');
}

export const template = (body) => JSON.stringify(body).split(PLACEHOLDER);

/** Body templates per gateway route; the baseline gets the wake bodies. */
export const BODY_TEMPLATES = {
  '/hooks/wake': template({ text: realisticText(PLACEHOLDER), mode: 'now' }),
  '/hooks/agent': template({
    message: realisticText(PLACEHOLDER),
    name: 'CI',
    wakeMode: 'next-heartbeat',
    deliver: false,
  }),
};

/** A tag of ten characters that no earlier invocation in this process used. */
let tags = 0;
export function freshTag() {
  tags++;
  return `${Date.now().toString(36).padStart(8, '0').slice(-8)}${(tags % 1296).toString(36).padStart(2, '0')}`;
}

/** The body for one id, the same text wrk's script builds. */
export const fillBody = (parts, id) => parts.join(id);

/** The id of request `n` of thread `thread` under `tag`, as the Lua script formats it. */
export const requestId = (tag, thread, n) =>
  `${tag}-${String(thread).padStart(2, '0')}-${String(n).padStart(9, '0')}`;
