import { createHash } from 'node:crypto';

/*
 * The dashboard: one self-contained page (no CDN, the broker's host may have no internet). The
 * script builds every node with textContent, never innerHTML, and the CSP admits only this
 * script and this style, by hash, so injected markup could not run (docs/management.md#dashboard).
 */

const STYLE = `
:root { color-scheme: light; --ink: #1d2330; --muted: #5b6475; --line: #dde2ea; --bg: #f5f7fa; --ok: #1f8a4c; --bad: #c0392b; --accent: #2f5fd0; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 12px 24px; padding: 14px 24px; background: #1d2330; color: #fff; }
header h1 { margin: 0; font-size: 20px; letter-spacing: .5px; }
header .service { color: #aab4c8; font-weight: 400; }
.facts { display: flex; flex-wrap: wrap; gap: 8px 20px; margin: 0; }
.facts div { display: flex; gap: 6px; } .facts dt { color: #aab4c8; } .facts dd { margin: 0; font-weight: 600; }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; background: #556; color: #fff; }
.badge.master, .badge.ok { background: var(--ok); } .badge.slave { background: #6b7385; }
.badge.stopping, .badge.unhealthy { background: var(--bad); }
main { padding: 8px 24px 32px; }
section { margin-top: 18px; } h2 { font-size: 16px; margin: 0 0 8px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #eef1f6; color: var(--muted); font-weight: 600; font-size: 12px; text-transform: uppercase; letter-spacing: .4px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.selected td { background: #eaf0ff; }
button.link { border: 0; padding: 0; background: none; color: var(--accent); font: inherit; cursor: pointer; text-decoration: underline; }
.ids { display: flex; flex-wrap: wrap; gap: 4px; } .id { padding: 0 6px; border-radius: 4px; background: #eef1f6; font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
.id-cell { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
.mode { color: var(--muted); font-size: 12px; }
.empty { color: var(--muted); margin: 8px 0 0; }
.error { color: var(--bad); font-weight: 600; }
form { display: flex; gap: 8px; align-items: center; } input { padding: 4px 8px; font: inherit; }
`;

const SCRIPT = `
(() => {
  'use strict';
  const TOKEN_KEY = 'whisker.managementToken';
  const REFRESH_MS = 1500;
  const params = new URLSearchParams(location.search);
  if (params.has('token')) {
    // taken once, kept for this tab only, and removed from the address bar and history
    sessionStorage.setItem(TOKEN_KEY, params.get('token') || '');
    params.delete('token');
    const rest = params.toString();
    history.replaceState(null, '', location.pathname + (rest ? '?' + rest : '') + location.hash);
  }
  let selected = null;
  const byId = (id) => document.getElementById(id);
  const el = (tag, text, className) => {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  };
  const num = (n) => Number(n).toLocaleString('en');
  const rate = (r) => (r === 0 ? '0' : Number(r).toFixed(1));
  const numCell = (text) => el('td', text, 'num');
  const uptime = (s) => {
    const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    return (d ? d + 'd ' : '') + (d || h ? h + 'h ' : '') + (d || h || m ? m + 'm ' : '') + (s % 60) + 's';
  };
  class Unauthorized extends Error {}
  async function get(path, allowMissing) {
    const token = sessionStorage.getItem(TOKEN_KEY);
    const res = await fetch(path, { headers: token ? { Authorization: 'Bearer ' + token } : {}, cache: 'no-store' });
    if (res.status === 401) throw new Unauthorized('token required');
    if (res.status === 404 && allowMissing) return null;
    if (!res.ok && res.status !== 503) throw new Error(path + ': HTTP ' + res.status);
    return res.json();
  }
  function renderHealth(health) {
    byId('service').textContent = health.serviceId;
    const role = byId('role');
    role.textContent = health.role;
    role.className = 'badge ' + (health.role === 'master' ? 'master' : 'slave');
    const status = byId('status');
    status.textContent = health.reason ? health.status + ': ' + health.reason : health.status;
    status.className = 'badge ' + (health.status === 'ok' ? 'ok' : health.status === 'stopping' ? 'stopping' : 'unhealthy');
    byId('uptime').textContent = uptime(health.uptimeSeconds);
    byId('connections').textContent = num(health.connections);
  }
  function renderQueues(queues) {
    const rows = queues.map((q) => {
      const tr = el('tr');
      tr.dataset.queue = q.name;
      if (q.name === selected) tr.className = 'selected';
      const name = el('td');
      const pick = el('button', q.name, 'link');
      pick.type = 'button';
      pick.addEventListener('click', () => { selected = selected === q.name ? null : q.name; void refresh(); });
      name.append(pick);
      tr.append(name, numCell(num(q.depth)), numCell(num(q.inFlight)), numCell(num(q.size)),
        numCell(rate(q.rates.received)), numCell(rate(q.rates.delivered)), numCell(rate(q.rates.acked)),
        numCell(num(q.counters.requeued)), numCell(num(q.counters.deadLettered)), numCell(num(q.counters.dropped)), numCell(num(q.counters.expired)));
      return tr;
    });
    byId('queue-rows').replaceChildren(...rows);
    byId('no-queues').hidden = rows.length > 0;
  }
  function renderDetail(detail) {
    byId('detail').hidden = detail === null;
    if (detail === null) return;
    byId('detail-name').textContent = detail.name;
    byId('id-rows').replaceChildren(...detail.ids.map((x) => {
      const tr = el('tr');
      tr.append(el('td', x.id, 'id-cell'), numCell(num(x.count)));
      return tr;
    }));
    byId('no-ids').hidden = detail.ids.length > 0;
    byId('ids-truncated').hidden = !detail.truncated;
    byId('ids-truncated').textContent = detail.truncated ? 'showing ' + detail.ids.length + ' of ' + num(detail.idCount) + ' ids' : '';
  }
  function renderClients(view) {
    const rows = view.clients.map((c) => {
      const tr = el('tr');
      const subs = el('td');
      for (const s of c.subscriptions) {
        const line = el('div', null, 'ids');
        line.append(el('span', s.mode, 'mode'), el('span', s.queue));
        for (const id of s.ids) line.append(el('span', id, 'id'));
        subs.append(line);
      }
      if (c.subscriptions.length === 0) subs.append(el('span', 'none', 'mode'));
      tr.append(el('td', c.client), el('td', c.node, 'id-cell'), subs);
      return tr;
    });
    byId('client-rows').replaceChildren(...rows);
    byId('no-clients').hidden = rows.length > 0;
  }
  let timer = null;
  async function refresh() {
    clearTimeout(timer);
    try {
      const [health, queues, clients] = await Promise.all([get('/health'), get('/api/queues'), get('/api/clients')]);
      const detail = selected === null ? null : await get('/api/queues/' + encodeURIComponent(selected), true);
      if (detail === null) selected = null;
      renderHealth(health);
      renderQueues(queues.queues);
      renderDetail(detail);
      renderClients(clients);
      byId('auth').hidden = true;
      byId('problem').hidden = true;
      byId('updated').textContent = new Date().toLocaleTimeString('en-GB');
      document.body.dataset.ready = 'true';
    } catch (error) {
      const unauthorized = error instanceof Unauthorized;
      byId('auth').hidden = !unauthorized;
      byId('problem').hidden = unauthorized;
      byId('problem').textContent = 'Cannot reach the broker: ' + error.message;
    }
    timer = setTimeout(refresh, REFRESH_MS);
  }
  byId('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, byId('token-input').value);
    byId('token-input').value = '';
    void refresh();
  });
  void refresh();
})();
`;

const BODY = `
<header>
  <h1>Whisker <span class="service" id="service"></span></h1>
  <dl class="facts">
    <div><dt>role</dt><dd><span id="role" class="badge">…</span></dd></div>
    <div><dt>status</dt><dd><span id="status" class="badge">…</span></dd></div>
    <div><dt>uptime</dt><dd id="uptime">…</dd></div>
    <div><dt>connections</dt><dd id="connections">…</dd></div>
    <div><dt>updated</dt><dd id="updated">…</dd></div>
  </dl>
</header>
<main>
  <section id="auth" hidden>
    <h2>This broker needs its management token</h2>
    <form id="token-form"><label for="token-input">Token</label><input id="token-input" type="password" autocomplete="off"><button type="submit">Use</button></form>
  </section>
  <p id="problem" class="error" role="alert" hidden></p>
  <section>
    <h2>Queues</h2>
    <table id="queues">
      <thead><tr><th>Queue</th><th class="num">Depth</th><th class="num">In flight</th><th class="num">Held</th><th class="num">In/s</th><th class="num">Out/s</th><th class="num">Acked/s</th><th class="num">Requeued</th><th class="num">Dead-lettered</th><th class="num">Dropped</th><th class="num">Expired</th></tr></thead>
      <tbody id="queue-rows"></tbody>
    </table>
    <p id="no-queues" class="empty">No queues yet.</p>
  </section>
  <section id="detail" hidden>
    <h2>Ids in <span id="detail-name"></span></h2>
    <table id="ids"><thead><tr><th>Id</th><th class="num">Messages</th></tr></thead><tbody id="id-rows"></tbody></table>
    <p id="no-ids" class="empty">No messages held.</p>
    <p id="ids-truncated" class="empty" hidden></p>
  </section>
  <section>
    <h2>Clients</h2>
    <table id="clients"><thead><tr><th>Client</th><th>Node</th><th>Subscriptions</th></tr></thead><tbody id="client-rows"></tbody></table>
    <p id="no-clients" class="empty">No clients connected.</p>
  </section>
</main>`;

const hash = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Whisker</title>
<style>${STYLE}</style>
</head>
<body>${BODY}
<script>${SCRIPT}</script>
</body>
</html>
`;

/** only this page's own script and style run; it fetches from its own origin only */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  `script-src ${hash(SCRIPT)}`,
  `style-src ${hash(STYLE)}`,
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
