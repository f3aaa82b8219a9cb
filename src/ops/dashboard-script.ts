/*
 * The dashboard's script, part one: fetching, the header, the queue and client tables, the
 * election and mirror panels. Every node is built with textContent, never innerHTML (docs/management.md#dashboard).
 * Part two (dashboard-panels.ts) adds charts, the queue's detail, peek and dead letters; both
 * run in one function, so they share these names.
 */
export const SCRIPT_CORE = `
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
  const state = { selected: null };
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
  const age = (s) => (s <= 0 ? '-' : s < 60 ? Number(s).toFixed(1) + ' s' : uptime(Math.round(s)));
  const uptime = (s) => {
    const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    return (d ? d + 'd ' : '') + (d || h ? h + 'h ' : '') + (d || h || m ? m + 'm ' : '') + (s % 60) + 's';
  };
  const clock = (ms) => new Date(ms).toLocaleTimeString('en-GB');
  const badge = (text, kind) => el('span', text, 'badge ' + kind);
  class Unauthorized extends Error {}
  const authHeaders = () => {
    const token = sessionStorage.getItem(TOKEN_KEY);
    return token ? { Authorization: 'Bearer ' + token } : {};
  };
  async function get(path, allowMissing) {
    const res = await fetch(path, { headers: authHeaders(), cache: 'no-store' });
    if (res.status === 401) throw new Unauthorized('token required');
    if (res.status === 404 && allowMissing) return null;
    if (!res.ok && res.status !== 503) throw new Error(path + ': HTTP ' + res.status);
    return res.json();
  }
  async function post(path, body) {
    const res = await fetch(path, { method: 'POST', headers: { ...authHeaders(), 'Content-Type': 'application/json' }, body: JSON.stringify(body), cache: 'no-store' });
    if (res.status === 401) throw new Unauthorized('token required');
    const answer = await res.json();
    if (!res.ok) throw new Error(answer.error || 'HTTP ' + res.status);
    return answer;
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
  /** health.election: the same view as /health and whisker status (absent without an election block) */
  const PHASES = { master: ['master', 'master'], slave: ['slave', 'slave'], starting: ['starting', 'warn'], 'etcd-unreachable': ['etcd unreachable', 'bad'] };
  function renderElection(health) {
    const e = health.election;
    byId('election').hidden = !e;
    if (!e) return;
    const [label, kind] = PHASES[e.phase] || [e.phase, 'warn'];
    const phase = el('td');
    phase.append(badge(label, kind));
    const changed = e.lastChangeAt === null ? '-' : clock(e.lastChangeAt) + ' (' + age((Date.now() - e.lastChangeAt) / 1000) + ' ago)';
    byId('election-row').replaceChildren(phase, numCell(e.epoch === null ? '-' : String(e.epoch)), el('td', e.leader === null ? 'none' : e.leader, 'id-cell'),
      numCell(e.leaseRemainingMs === null ? '-' : (e.leaseRemainingMs / 1000).toFixed(1) + ' s'), el('td', changed), el('td', e.reason || '-'));
  }
  /** cluster: null without a cluster block (GET /api/cluster is 404 then) */
  function renderCluster(cluster) {
    byId('cluster').hidden = cluster === null;
    if (cluster === null) return;
    byId('cluster-set').textContent = 'this broker: set ' + cluster.set;
    const etcd = byId('cluster-etcd');
    etcd.hidden = cluster.etcd.reachable;
    etcd.textContent = cluster.etcd.reachable ? '' : (cluster.etcd.mapRead ? 'etcd does not answer this broker (' + cluster.etcd.reason + '): the sets below are as it last read them' : 'the cluster map was never read from etcd since this broker started (' + cluster.etcd.reason + ')');
    const rows = [];
    for (const set of cluster.sets) {
      const s = set.stats;
      const figures = [numCell(num(set.placements)), numCell(s ? num(s.waiting) : '-'), numCell(s ? rate(s.rates.received) : '-'), numCell(s ? rate(s.rates.delivered) : '-'), numCell(s ? rate(s.rates.acked) : '-')];
      const blanks = () => figures.map(() => numCell(''));
      const name = el('td', set.name);
      if (set.name === cluster.set) name.className = 'own-set';
      if (set.brokers.length === 0) {
        const tr = el('tr');
        tr.dataset.set = set.name;
        const down = el('td');
        down.colSpan = 4;
        down.append(badge('down: no broker registered', 'bad'));
        tr.append(name, down, ...figures);
        rows.push(tr);
        continue;
      }
      set.brokers.forEach((b, i) => {
        const tr = el('tr');
        tr.dataset.set = set.name;
        tr.dataset.broker = b.serviceId;
        const role = el('td');
        role.append(b.isMaster ? badge('master', 'master') : badge('slave', 'slave'));
        if (i === 0 && set.master === null) role.append(' ', badge('no master', 'bad'));
        tr.append(i === 0 ? name : el('td'), el('td', b.serviceId), el('td', b.advertise, 'id-cell'), role, numCell(b.isMaster && b.epoch !== null ? String(b.epoch) : ''), ...(i === 0 ? figures : blanks()));
        rows.push(tr);
      });
    }
    byId('cluster-rows').replaceChildren(...rows);
    byId('cluster-note').textContent = num(cluster.placements) + ' of at most ' + num(cluster.maxPlacements) + ' queues placed. Rates per second over about 5 s, as the master of each set last published them in etcd; roles as each broker registered them.';
  }
  function renderMirrors(health) {
    const peers = health.peers || [];
    byId('mirrors').hidden = peers.length === 0 && !health.conflict;
    byId('conflict').hidden = !health.conflict;
    byId('conflict').textContent = health.conflict ? 'Master conflict: ' + health.conflict.masters.join(' and ') + ' are configured as master; ' + health.conflict.delivering + ' delivers' : '';
    byId('peer-rows').replaceChildren(...peers.map((p) => {
      const tr = el('tr');
      tr.dataset.peer = p.serviceId;
      const link = el('td');
      link.append(p.connected ? badge('connected', 'ok') : badge('down', 'bad'));
      const step = el('td');
      // what is true from this broker's side: we follow the peer, or the peer follows us
      const inStep = p.following ? p.inStep : p.followsUs === 'in step';
      step.append(p.following || p.followsUs ? (inStep ? badge('in step', 'ok') : badge('syncing', 'warn')) : el('span', '-', 'mode'));
      const mirroring = p.following ? 'we follow it' : p.followsUs ? 'follows us' : 'no';
      tr.append(el('td', p.serviceId), el('td', p.spec, 'id-cell'), link, el('td', p.role), el('td', mirroring), step,
        numCell(p.following ? num(p.lagMessages) : '-'), numCell(p.following ? Number(p.lagSeconds).toFixed(1) : '-'));
      return tr;
    }));
  }
  function renderQueues(queues) {
    const rows = queues.map((q) => {
      const tr = el('tr');
      tr.dataset.queue = q.name;
      if (q.name === state.selected) tr.className = 'selected';
      const name = el('td');
      const pick = el('button', q.name, 'link');
      pick.type = 'button';
      pick.addEventListener('click', () => { selectQueue(state.selected === q.name ? null : q.name); });
      name.append(pick);
      tr.append(name, numCell(num(q.depth)), numCell(num(q.inFlight)), numCell(num(q.size)), numCell(age(q.oldestWaitingSeconds)),
        numCell(num(q.consumers)), numCell(num(q.listeners)),
        numCell(rate(q.rates.received)), numCell(rate(q.rates.delivered)), numCell(rate(q.rates.acked)),
        numCell(num(q.counters.requeued)), numCell(num(q.counters.deadLettered)), numCell(num(q.counters.dropped)), numCell(num(q.counters.expired)));
      return tr;
    });
    byId('queue-rows').replaceChildren(...rows);
    byId('no-queues').hidden = rows.length > 0;
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
      if (c.kind === 'peer') subs.append(el('span', 'mirror broker (peer link)', 'mode'));
      else if (c.subscriptions.length === 0) subs.append(el('span', 'none', 'mode'));
      tr.append(el('td', c.client), el('td', c.node, 'id-cell'), subs);
      return tr;
    });
    byId('client-rows').replaceChildren(...rows);
    byId('no-clients').hidden = rows.length > 0;
  }
`;
