/*
 * The dashboard's script, part two: rate charts (SVG built node by node), a queue's detail
 * (handlers, ids, peek), dead letters with confirmed actions, and the refresh loop.
 */
export const SCRIPT_PANELS = `
  const SVG = 'http://www.w3.org/2000/svg';
  const SERIES = [
    { key: 'received', colour: '#2f5fd0' },
    { key: 'delivered', colour: '#1f8a4c' },
    { key: 'acked', colour: '#8e44ad' },
    { key: 'requeued', colour: '#d35400' },
  ];
  const svgEl = (tag, attrs, text) => {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const niceMax = (v) => {
    if (v <= 0) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    return [1, 2, 5, 10].map((m) => m * p).find((m) => m >= v);
  };
  /** a line per series over the points; rates(point) is null where the queue has no value */
  function drawChart(svg, legend, points, rates) {
    // drawn at the size it is shown, so text keeps its size and the lines fill the width
    const W = Math.max(300, Math.round(svg.getBoundingClientRect().width) || 600), H = 170, L = 46, R = 10, T = 10, B = 20;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    const values = points.map(rates);
    let max = 0;
    for (const v of values) if (v) for (const s of SERIES) max = Math.max(max, v[s.key]);
    const top = niceMax(max);
    const t0 = points.length > 0 ? points[0].at : 0;
    const t1 = points.length > 1 ? points[points.length - 1].at : t0 + 1;
    const x = (at) => L + ((at - t0) / (t1 - t0)) * (W - L - R);
    const y = (v) => T + (H - T - B) * (1 - v / top);
    const nodes = [];
    for (const f of [0, 0.5, 1]) {
      nodes.push(svgEl('line', { x1: L, x2: W - R, y1: y(top * f), y2: y(top * f), stroke: '#dde2ea', 'stroke-width': 1 }));
      nodes.push(svgEl('text', { x: L - 6, y: y(top * f) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#5b6475' }, rate(top * f) + '/s'));
    }
    if (points.length > 0) {
      nodes.push(svgEl('text', { x: L, y: H - 4, 'font-size': 11, fill: '#5b6475' }, clock(t0)));
      nodes.push(svgEl('text', { x: W - R, y: H - 4, 'text-anchor': 'end', 'font-size': 11, fill: '#5b6475' }, clock(t1)));
    }
    for (const s of SERIES) {
      const coords = [];
      points.forEach((p, i) => { if (values[i]) coords.push(x(p.at).toFixed(1) + ',' + y(values[i][s.key]).toFixed(1)); });
      if (coords.length === 0) continue;
      if (coords.length === 1) {
        const [cx, cy] = coords[0].split(',');
        nodes.push(svgEl('circle', { cx, cy, r: 3, fill: s.colour, 'data-series': s.key }));
        continue;
      }
      nodes.push(svgEl('polyline', { points: coords.join(' '), fill: 'none', stroke: s.colour, 'stroke-width': 2, 'stroke-linejoin': 'round', 'data-series': s.key }));
    }
    svg.replaceChildren(...nodes);
    svg.dataset.points = String(points.length);
    const last = values.filter(Boolean).pop();
    legend.replaceChildren(...SERIES.map((s) => {
      const li = el('li', s.key + ' ', s.key);
      li.append(el('span', last ? rate(last[s.key]) + '/s' : '-'));
      return li;
    }));
  }
  function renderHistory(view) {
    drawChart(byId('chart-total'), byId('legend-total'), view.points, (p) => p.total);
    if (state.selected !== null) drawChart(byId('chart-queue'), byId('legend-queue'), view.points, (p) => p.queues[state.selected] || null);
  }

  // a handler's bound: its prefetch, or the client's flow limit when that is lower ('paused' at 0)
  const held = (prefetch, limit) => {
    if (limit === 0) return 'paused';
    if (limit !== null && (prefetch === null || limit < prefetch)) return num(limit) + ' (limit)';
    return prefetch === null ? '-' : num(prefetch);
  };
  function renderDetail(detail) {
    byId('detail').hidden = detail === null;
    if (detail === null) return;
    byId('detail-name').textContent = detail.name;
    byId('detail-facts').textContent = 'prefetch ' + detail.settings.prefetch + ', requeue after ' + detail.settings.requeueIntervalMs / 1000 + ' s, at most ' +
      detail.settings.requeueLimit + ' deliveries' + (detail.settings.deadLetter ? ', then to ' + detail.settings.deadLetter : '') + '; oldest waiting ' + age(detail.oldestWaitingSeconds);
    byId('handler-rows').replaceChildren(...detail.handlers.map((h) => {
      const tr = el('tr');
      const ids = el('td', null, 'ids');
      for (const id of h.ids) ids.append(el('span', id, 'id'));
      tr.append(el('td', h.client), el('td', h.node, 'id-cell'), el('td', h.mode, 'mode'), ids, numCell(held(h.prefetch, h.limit)),
        numCell(num(h.inFlight)), numCell(num(h.delivered)), numCell(rate(h.rate)));
      return tr;
    }));
    byId('no-handlers').hidden = detail.handlers.length > 0;
    byId('id-rows').replaceChildren(...detail.ids.map((x) => {
      const tr = el('tr');
      const actions = el('td');
      const peekButton = el('button', 'peek', 'action');
      peekButton.type = 'button';
      peekButton.addEventListener('click', () => void peekAt(detail.name, x.id));
      actions.append(peekButton);
      tr.append(el('td', x.id, 'id-cell'), numCell(num(x.count)), actions);
      return tr;
    }));
    byId('no-ids').hidden = detail.ids.length > 0;
    byId('ids-truncated').hidden = !detail.truncated;
    byId('ids-truncated').textContent = detail.truncated ? 'showing ' + detail.ids.length + ' of ' + num(detail.idCount) + ' ids' : '';
  }
  function selectQueue(name) {
    state.selected = name;
    byId('peek').hidden = true;
    void refresh();
  }

  const bodyCell = (shown, data) => {
    const td = el('td');
    if (shown) td.append(el('pre', JSON.stringify(data), 'body'));
    return td;
  };
  async function peekAt(queue, id) {
    try {
      const view = await get('/api/queues/' + encodeURIComponent(queue) + '/messages?limit=20' + (id === null ? '' : '&id=' + encodeURIComponent(id)));
      byId('peek').hidden = false;
      byId('peek-title').textContent = 'Oldest messages of ' + queue + (id === null ? '' : ' id ' + id) + ' at ' + clock(Date.now());
      byId('peek-body-head').hidden = !view.bodies;
      byId('peek-rows').replaceChildren(...view.messages.map((m) => {
        const tr = el('tr');
        const states = m.waitingForSubscriber ? 'no subscriber yet' : m.groups.map((g) => g.state).join(', ') || '-';
        tr.append(el('td', m.messageId, 'id-cell'), el('td', m.id, 'id-cell'), el('td', new Date(m.created).toISOString()), el('td', m.from),
          numCell(Math.max(0, ...m.groups.map((g) => g.nbRequeues))), el('td', states));
        if (view.bodies) tr.append(bodyCell(true, m.data));
        return tr;
      }));
      byId('peek-note').textContent = view.messages.length + ' of ' + num(view.size) + ' held' + (view.bodies ? '' : '; bodies hidden (showBodies is off in the broker config)');
    } catch (error) {
      showProblem(error);
    }
  }

  let confirmed = null;
  function confirmAction(text, action) {
    confirmed = action;
    byId('confirm-text').textContent = text;
    byId('confirm').hidden = false;
    byId('confirm-yes').focus();
  }
  byId('confirm-yes').addEventListener('click', () => {
    const action = confirmed;
    confirmed = null;
    byId('confirm').hidden = true;
    if (action) void action();
  });
  byId('confirm-no').addEventListener('click', () => { confirmed = null; byId('confirm').hidden = true; });
  async function act(path, body, what) {
    try {
      const result = await post(path, body);
      const failed = (result.failed || []).map((f) => f.messageId + ': ' + f.reason).join('; ');
      byId('action-result').textContent = what + ': ' + (result.replayed ? result.replayed.length + ' replayed' : result.purged + ' purged') + (failed ? '; not done: ' + failed : '');
    } catch (error) {
      byId('action-result').textContent = what + ' refused: ' + error.message;
    }
    await refresh();
  }
  function renderDeadLetters(view) {
    byId('dead-letters').hidden = view.queues.length === 0;
    if (view.queues.length === 0) return;
    state.dlq = view.queue;
    byId('dlq-pick').replaceChildren(...view.queues.map((q) => {
      const b = el('button', q.queue + ' (' + num(q.size) + ')', 'action');
      b.type = 'button';
      b.setAttribute('aria-pressed', String(q.queue === view.queue));
      b.addEventListener('click', () => { state.dlqChosen = q.queue; void refresh(); });
      return b;
    }));
    byId('dlq-actions-off').hidden = view.actions;
    const purgeAll = byId('dlq-purge-all');
    purgeAll.disabled = !view.actions || view.messages.length === 0;
    purgeAll.onclick = () => confirmAction('Purge every dead letter of ' + view.queue + '? They are dropped for good.', () => act('/api/dead-letters/purge', { queue: view.queue, all: true }, 'purge all'));
    byId('dlq-body-head').hidden = !view.bodies;
    byId('dlq-rows').replaceChildren(...view.messages.map((m) => {
      const tr = el('tr');
      tr.dataset.message = m.messageId;
      const o = m.original;
      const actions = el('td');
      const replay = el('button', 'replay', 'action');
      const purge = el('button', 'purge', 'action danger');
      for (const b of [replay, purge]) { b.type = 'button'; b.disabled = !view.actions || !o; }
      purge.disabled = !view.actions;
      replay.addEventListener('click', () => confirmAction('Replay dead letter ' + m.messageId + ' to ' + o.channel + ' as ' + o.from + '?', () => act('/api/dead-letters/replay', { queue: view.queue, messageIds: [m.messageId] }, 'replay')));
      purge.addEventListener('click', () => confirmAction('Purge dead letter ' + m.messageId + (o ? ' (from ' + o.channel + ')' : '') + '? It is dropped for good.', () => act('/api/dead-letters/purge', { queue: view.queue, messageIds: [m.messageId] }, 'purge')));
      actions.append(replay, purge);
      tr.append(el('td', m.messageId, 'id-cell'), el('td', clock(m.deadAt)), el('td', o ? o.channel : '(not an envelope)', 'id-cell'), el('td', o ? o.from : '-'),
        numCell(o ? num(o.nbDeliveries) : '-'), el('td', o ? o.lastError : '-'));
      if (view.bodies) tr.append(bodyCell(true, m.data));
      tr.append(actions);
      return tr;
    }));
    byId('no-dead-letters').hidden = view.messages.length > 0;
  }

  function showProblem(error) {
    const unauthorized = error instanceof Unauthorized;
    byId('auth').hidden = !unauthorized;
    byId('problem').hidden = unauthorized;
    byId('problem').textContent = 'Cannot reach the broker: ' + error.message;
  }
  let timer = null;
  async function refresh() {
    clearTimeout(timer);
    try {
      const selected = state.selected;
      const [health, queues, clients, historyView, dead, cluster] = await Promise.all([get('/health'), get('/api/queues'), get('/api/clients'),
        get('/api/history' + (selected === null ? '' : '?queue=' + encodeURIComponent(selected))), get('/api/dead-letters' + (state.dlqChosen ? '?queue=' + encodeURIComponent(state.dlqChosen) : ''), true), get('/api/cluster', true)]);
      const detail = selected === null ? null : await get('/api/queues/' + encodeURIComponent(selected), true);
      if (detail === null) state.selected = null;
      renderHealth(health);
      renderElection(health);
      renderCluster(cluster);
      renderMirrors(health);
      renderQueues(queues.queues);
      renderDetail(detail);
      renderHistory(historyView);
      if (dead) renderDeadLetters(dead);
      renderClients(clients);
      byId('auth').hidden = true;
      byId('problem').hidden = true;
      byId('updated').textContent = clock(Date.now());
      document.body.dataset.ready = 'true';
    } catch (error) {
      showProblem(error);
    }
    timer = setTimeout(refresh, REFRESH_MS);
  }
  byId('peek-queue').addEventListener('click', () => { if (state.selected !== null) void peekAt(state.selected, null); });
  byId('peek-close').addEventListener('click', () => { byId('peek').hidden = true; });
  byId('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, byId('token-input').value);
    byId('token-input').value = '';
    void refresh();
  });
  void refresh();
`;
