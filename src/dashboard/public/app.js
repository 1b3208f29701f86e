// @ts-check
/**
 * The dashboard's shell: the token form, the hash routes (#/runs, #/runs/<id>,
 * #/deliveries, #/failures, #/usage, #/session), the message areas, and the poll that keeps the
 * current view live.
 *
 * Live by polling the API every 2 s rather than server-sent events: EventSource
 * cannot send an Authorization header, so the token would have to travel in the
 * URL or a cookie; polling uses the same authenticated JSON API as the CLI, reads
 * the store (so it is right across PostgreSQL replicas), and costs one indexed
 * query per open tab every 2 s — none while the tab is hidden.
 */
import { ApiError, forgetToken, keepToken, storedToken, tokenProblem } from './api.js';
import { deliveriesView } from './deliveries.js';
import { fill } from './dom.js';
import { failuresView } from './failures.js';
import { runView } from './run.js';
import { runsView } from './runs.js';
import { sessionView } from './session.js';
import { usageView } from './usage.js';

const POLL_MS = 2000;

/**
 * @typedef {object} View
 * @property {string} name the nav entry it belongs to
 * @property {HTMLElement} element
 * @property {() => Promise<void>} refresh reads the API and updates `element`; throws ApiError
 */

/**
 * What views may ask of the shell.
 * @typedef {object} Shell
 * @property {() => void} refreshNow
 * @property {(route: string) => void} navigate
 * @property {(route: string, query: Record<string, string>) => void} replaceQuery keeps filters in the address without re-routing
 * @property {(content: import('./dom.js').Child) => void} notify
 * @property {(button: HTMLElement, action: () => Promise<void>) => Promise<void>} act runs a button's API action, showing its outcome
 */

/** @param {string} id */
const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

const ui = {
  login: byId('login'),
  form: /** @type {HTMLFormElement} */ (byId('token-form')),
  token: /** @type {HTMLInputElement} */ (byId('token')),
  loginProblem: byId('login-problem'),
  nav: byId('nav'),
  view: byId('view'),
  live: byId('live'),
  signOut: byId('sign-out'),
  notice: byId('notice'),
  problem: byId('problem'),
};

/** @type {View | undefined} */
let current;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;
let polling = false;
let pollAgain = false;

/** @type {Shell} */
const shell = {
  refreshNow: () => void poll(),
  navigate(route) {
    location.hash = `#${route}`;
  },
  replaceQuery(route, query) {
    const search = new URLSearchParams(Object.entries(query).filter(([, value]) => value !== '')).toString();
    history.replaceState(null, '', `#${route}${search ? `?${search}` : ''}`);
  },
  notify(content) {
    ui.notice.className = 'notice ok';
    fill(ui.notice, content);
    ui.notice.hidden = false;
  },
  async act(button, action) {
    const button_ = /** @type {HTMLButtonElement} */ (button);
    button_.disabled = true;
    ui.notice.hidden = true;
    try {
      await action();
    } catch (error) {
      if (!signedOutBy(error)) {
        ui.notice.className = 'notice bad';
        fill(ui.notice, sentenceOf(error));
        ui.notice.hidden = false;
      }
    } finally {
      button_.disabled = false;
      poll();
    }
  },
};

/** @param {unknown} error */
function sentenceOf(error) {
  if (error instanceof ApiError) return error.message;
  return `The dashboard failed: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * A 401 ends the session: back to the token form, with the gateway's sentence.
 * @param {unknown} error
 */
function signedOutBy(error) {
  if (!(error instanceof ApiError) || error.status !== 401) return false;
  signOut(error.message);
  return true;
}

/** @param {string} [message] shown on the token form */
function signOut(message) {
  forgetToken();
  current = undefined;
  clearTimeout(timer);
  ui.nav.hidden = true;
  ui.view.hidden = true;
  ui.signOut.hidden = true;
  ui.notice.hidden = true;
  ui.problem.hidden = true;
  ui.live.textContent = '';
  ui.loginProblem.textContent = message ?? '';
  ui.loginProblem.hidden = !message;
  ui.login.hidden = false;
  ui.token.value = '';
  ui.token.focus();
}

/** The view the address names. */
function route() {
  if (!storedToken()) {
    signOut();
    return;
  }
  const raw = location.hash.replace(/^#/, '') || '/runs';
  const [path = '', search = ''] = raw.split('?', 2);
  const parts = path.split('/').filter(Boolean);
  const params = new URLSearchParams(search);
  let view;
  try {
    const [first, second] = parts.map(decodeURIComponent);
    if (first === 'runs' && second) view = runView(shell, second);
    else if (first === 'deliveries') view = deliveriesView(shell, params);
    else if (first === 'failures') view = failuresView(shell);
    else if (first === 'usage') view = usageView(shell, params);
    else if (first === 'session') view = sessionView(shell, params);
    else view = runsView(shell, params);
  } catch {
    view = runsView(shell, params);
  }
  current = view;
  ui.login.hidden = true;
  ui.nav.hidden = false;
  ui.signOut.hidden = false;
  ui.view.hidden = false;
  ui.problem.hidden = true;
  for (const entry of ui.nav.querySelectorAll('a')) {
    if (entry.dataset.view === view.name || (view.name === 'run' && entry.dataset.view === 'runs')) {
      entry.setAttribute('aria-current', 'page');
    } else entry.removeAttribute('aria-current');
  }
  fill(ui.view, view.element);
  void poll();
}

/** Refreshes the current view now, then every POLL_MS while the tab is visible. */
async function poll() {
  clearTimeout(timer);
  if (polling) {
    pollAgain = true;
    return;
  }
  const view = current;
  if (!view) return;
  if (document.hidden) {
    ui.live.textContent = 'paused while the tab is hidden';
    ui.live.className = 'live paused';
    return;
  }
  polling = true;
  try {
    await view.refresh();
    if (view === current) {
      ui.problem.hidden = true;
      ui.live.textContent = `live · updated ${new Date().toLocaleTimeString()}`;
      ui.live.className = 'live ok';
    }
  } catch (error) {
    if (view === current && !signedOutBy(error)) {
      fill(ui.problem, sentenceOf(error));
      ui.problem.hidden = false;
      ui.live.textContent = 'not updating';
      ui.live.className = 'live bad';
    }
  } finally {
    polling = false;
  }
  if (!current) return;
  if (pollAgain || view !== current) {
    pollAgain = false;
    void poll();
    return;
  }
  timer = setTimeout(poll, POLL_MS);
}

ui.form.addEventListener('submit', (event) => {
  // The form never submits (CSP form-action 'none' too): the token stays out of every URL.
  event.preventDefault();
  const token = ui.token.value.trim();
  const problem = tokenProblem(token);
  if (problem) {
    ui.loginProblem.textContent = problem;
    ui.loginProblem.hidden = false;
    return;
  }
  keepToken(token);
  ui.token.value = '';
  route();
});
ui.signOut.addEventListener('click', () => signOut());
ui.notice.addEventListener('click', () => {
  ui.notice.hidden = true;
});
window.addEventListener('hashchange', () => {
  ui.notice.hidden = ui.notice.classList.contains('bad') || ui.notice.hidden;
  route();
});
document.addEventListener('visibilitychange', () => void poll());
route();
