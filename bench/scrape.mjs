// Scrapes GET /metrics every second while a load runs (--scrape-metrics), as a
// Prometheus server would, only more often than the usual 15 s: the scrape
// reads the store's counts and renders every series on the gateway's own
// thread, so its cost lands on the hook requests measured at the same time.
const EVERY_MS = 1000;

/** Starts scraping each of `urls`; `stop()` ends it and resolves to what it saw. */
export function startScraping(urls, token) {
  const durations = [];
  const statuses = new Map();
  let stopped = false;
  const inFlight = new Set();
  const scrapeOnce = (url) => {
    const started = performance.now();
    const request = fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })
      .then(async (response) => {
        await response.arrayBuffer();
        return response.status;
      })
      .catch(() => 'error')
      .then((status) => {
        durations.push(performance.now() - started);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      })
      .finally(() => inFlight.delete(request));
    inFlight.add(request);
  };
  const timer = setInterval(() => {
    if (!stopped) for (const url of urls) scrapeOnce(url);
  }, EVERY_MS);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all(inFlight);
      return { durations, statuses: Object.fromEntries(statuses) };
    },
  };
}

/** One line per gateway: how many scrapes, their answers, and how long they took. */
export function scrapeSummary(scrapes) {
  const durations = scrapes.flatMap((s) => s.durations).sort((a, b) => a - b);
  const statuses = {};
  for (const s of scrapes) {
    for (const [status, count] of Object.entries(s.statuses))
      statuses[status] = (statuses[status] ?? 0) + count;
  }
  if (durations.length === 0) return 'no scrapes';
  const at = (q) => durations[Math.min(durations.length - 1, Math.floor(q * durations.length))].toFixed(1);
  const answers = Object.entries(statuses)
    .map(([status, count]) => `${count}× ${status}`)
    .join(', ');
  return `${durations.length} scrapes (${answers}); scrape time p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${durations.at(-1).toFixed(1)} ms`;
}
