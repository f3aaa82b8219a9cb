import { createHash } from 'node:crypto';
import { SCRIPT_PANELS } from './dashboard-panels.js';
import { SCRIPT_CORE } from './dashboard-script.js';
import { STYLE } from './dashboard-style.js';

/*
 * The dashboard: one self-contained page (no CDN, the broker's host may have no internet). The
 * script builds every node with textContent, never innerHTML, and the CSP admits only this
 * script and this style, by hash, so injected markup could not run (docs/management.md#dashboard).
 */

const SCRIPT = `
(() => {
  'use strict';
${SCRIPT_CORE}
${SCRIPT_PANELS}
})();
`;

const num = (label: string) => `<th class="num">${label}</th>`;

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
  <div id="confirm" role="alertdialog" aria-labelledby="confirm-text" hidden><p id="confirm-text"></p><button id="confirm-yes" class="action danger" type="button">Confirm</button><button id="confirm-no" class="action" type="button">Cancel</button></div>
  <p id="action-result" class="note" role="status"></p>
  <section>
    <h2>Rates, all queues</h2>
    <div class="chart"><svg id="chart-total" role="img" aria-label="messages per second, all queues"></svg><ul class="legend" id="legend-total"></ul></div>
  </section>
  <section id="election" hidden>
    <h2>Election (etcd)</h2>
    <table id="election-table"><thead><tr><th>This broker</th>${num('Epoch')}<th>Leader</th>${num('Lease left')}<th>Last change</th><th>Why not master</th></tr></thead><tbody><tr id="election-row"></tr></tbody></table>
  </section>
  <section id="cluster" hidden>
    <h2>Cluster <span class="mode" id="cluster-set"></span></h2>
    <p id="cluster-etcd" class="error" hidden></p>
    <table id="cluster-table"><thead><tr><th>Set</th><th>Broker</th><th>Address</th><th>Role</th>${num('Epoch')}${num('Queues')}${num('Waiting')}${num('In/s')}${num('Out/s')}${num('Acked/s')}</tr></thead><tbody id="cluster-rows"></tbody></table>
    <p id="cluster-note" class="note"></p>
  </section>
  <section id="mirrors" hidden>
    <h2>Mirrors</h2>
    <p id="conflict" class="error" hidden></p>
    <table id="peers"><thead><tr><th>Peer</th><th>Address</th><th>Link</th><th>Role</th><th>Mirroring</th><th>In step</th>${num('Lag (messages)')}${num('Lag (s)')}</tr></thead><tbody id="peer-rows"></tbody></table>
    <p id="mirrors-note" class="note">Seen from this broker: "follows us" is a peer mirroring this master, "we follow it" the master this broker mirrors. Lag is measured by the follower: a master shows its followers' lag on their own dashboards.</p>
  </section>
  <section>
    <h2>Queues</h2>
    <table id="queues">
      <thead><tr><th>Queue</th>${num('Depth')}${num('In flight')}${num('Held')}${num('Oldest')}${num('Consumers')}${num('Listeners')}${num('In/s')}${num('Out/s')}${num('Acked/s')}${num('Requeued*')}${num('Dead-lettered*')}${num('Dropped*')}${num('Expired*')}</tr></thead>
      <tbody id="queue-rows"></tbody>
    </table>
    <p id="counters-note" class="note">* counted by this broker since it started: each broker counts its own (a slave counts what it saw happen, from its own start), so a master and its slave show different numbers.</p>
    <p id="no-queues" class="empty">No queues yet.</p>
  </section>
  <section id="detail" hidden>
    <h2>Queue <span id="detail-name"></span></h2>
    <p id="detail-facts" class="note"></p>
    <div class="chart"><svg id="chart-queue" role="img" aria-label="messages per second, this queue"></svg><ul class="legend" id="legend-queue"></ul></div>
    <h3>Consumers and listeners</h3>
    <table id="handlers"><thead><tr><th>Client</th><th>Node</th><th>Mode</th><th>Ids</th>${num('Prefetch')}${num('In flight')}${num('Delivered')}${num('Rate/s')}</tr></thead><tbody id="handler-rows"></tbody></table>
    <p id="no-handlers" class="empty">Nobody subscribes: messages wait.</p>
    <h3>Ids <button id="peek-queue" class="action" type="button">peek at the oldest</button></h3>
    <table id="ids"><thead><tr><th>Id</th>${num('Messages')}<th></th></tr></thead><tbody id="id-rows"></tbody></table>
    <p id="no-ids" class="empty">No messages held.</p>
    <p id="ids-truncated" class="empty" hidden></p>
    <div id="peek" hidden>
      <h3><span id="peek-title"></span> <button id="peek-close" class="action" type="button">close</button></h3>
      <table id="peeked"><thead><tr><th>Message id</th><th>Id</th><th>Created</th><th>From</th>${num('Requeues')}<th>State</th><th id="peek-body-head" hidden>Body</th></tr></thead><tbody id="peek-rows"></tbody></table>
      <p id="peek-note" class="note"></p>
    </div>
  </section>
  <section id="dead-letters" hidden>
    <h2>Dead letters</h2>
    <div class="dlq-pick" id="dlq-pick"></div>
    <p id="dlq-actions-off" class="note" hidden>Replay and purge need <code>management.token</code> in the broker config.</p>
    <table id="dlq"><thead><tr><th>Message id</th><th>Dead at</th><th>From channel</th><th>Sender</th>${num('Deliveries')}<th>Last error</th><th id="dlq-body-head" hidden>Body</th><th><button id="dlq-purge-all" class="action danger" type="button">purge all</button></th></tr></thead><tbody id="dlq-rows"></tbody></table>
    <p id="no-dead-letters" class="empty">No dead letters.</p>
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
