'use strict';
// ktool ui: every value from the cluster is put into the page as text
// (textContent, setAttribute), never as HTML, so record contents and names
// cannot inject markup or script.

const CSRF = document.querySelector('meta[name=csrf]').content;
const READ_ONLY = document.body.dataset.readonly === 'true';
const app = document.getElementById('app');

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

function fill(el, ...kids) {
  el.replaceChildren();
  for (const k of kids.flat(Infinity)) {
    if (k !== null && k !== undefined && k !== false) el.append(k instanceof Node ? k : String(k));
  }
}

async function api(path) {
  const r = await fetch(path, { headers: { Accept: 'application/json' } });
  const j = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}

async function act(name, body) {
  const r = await fetch('/api/actions/' + name, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Ktool-Csrf': CSRF },
    body: JSON.stringify(body),
  });
  const j = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}

function notice(msg, bad) {
  const n = document.getElementById('notice');
  n.className = bad ? 'bad' : 'good';
  n.textContent = msg;
  n.hidden = false;
}

// confirmDialog shows body and resolves true when the user confirms.
function confirmDialog(title, body, label) {
  const modal = document.getElementById('modal');
  document.getElementById('modal-title').textContent = title;
  fill(document.getElementById('modal-body'), body);
  const ok = document.getElementById('modal-confirm');
  const cancel = document.getElementById('modal-cancel');
  ok.textContent = label || 'Confirm';
  modal.hidden = false;
  return new Promise((resolve) => {
    const done = (v) => { modal.hidden = true; ok.onclick = cancel.onclick = null; resolve(v); };
    ok.onclick = () => done(true);
    cancel.onclick = () => done(false);
  });
}

// runAction confirms, runs and reports one action.
async function runAction(title, body, name, req) {
  if (!(await confirmDialog(title, body, 'Run'))) return null;
  try {
    const res = await act(name, req);
    notice(res.message);
    refresh();
    return res;
  } catch (e) {
    notice(e.message, true);
    return null;
  }
}

function field(label, input) { return h('label', { class: 'field' }, h('span', {}, label), input); }

function ids(xs) { return (xs || []).join(','); }
function num(n) { return n < 0 ? '–' : String(n); }
function bytes(n) {
  if (n < 0) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + ' ' + u[i];
}
function when(ms) { return new Date(ms).toISOString().replace('T', ' ').replace('Z', ' UTC'); }
function topicLink(t) { return h('a', { href: '/topics/' + encodeURIComponent(t) }, t); }
function groupLink(g) { return h('a', { href: '/groups/' + encodeURIComponent(g) }, g); }

function table(id, headers, rows) {
  return h('table', { id },
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))),
    h('tbody', {}, rows));
}

function pager(total, page, size, go) {
  const pages = Math.max(1, Math.ceil(total / size));
  return h('div', { class: 'pager' },
    h('button', { type: 'button', disabled: page <= 0, onclick: () => go(page - 1) }, '‹ prev'),
    h('span', { class: 'pageinfo' }, `page ${page + 1} of ${pages} (${total})`),
    h('button', { type: 'button', disabled: page >= pages - 1, onclick: () => go(page + 1) }, 'next ›'));
}

// Live updates: one event stream; each snapshot event re-reads the page's data.
let pageRefresh = null;
let refreshing = false;
let again = false;
async function refresh() {
  if (!pageRefresh) return;
  if (refreshing) { again = true; return; }
  refreshing = true;
  try { await pageRefresh(); } catch (e) { notice(e.message, true); }
  refreshing = false;
  if (again) { again = false; refresh(); }
}

function connect() {
  const live = document.getElementById('live');
  const es = new EventSource('/api/events');
  es.addEventListener('snapshot', (ev) => {
    const d = JSON.parse(ev.data);
    live.className = 'live on';
    live.textContent = 'live · ' + new Date(d.at).toLocaleTimeString();
    live.dataset.gen = d.gen;
    refresh();
  });
  es.onerror = () => { live.className = 'live off'; live.textContent = 'reconnecting…'; };
}

// ---- Cluster ----
function clusterPage() {
  const summary = h('div', { class: 'cards', id: 'summary' });
  const brokers = h('div', { id: 'brokers' });
  const health = h('div', { id: 'health' });
  let kind = 'under_replicated';
  let hpage = 0;
  let bpage = 0;
  const actions = h('div', { class: 'actions' });
  if (!READ_ONLY) {
    actions.append(
      h('button', { type: 'button', id: 'elect-all', onclick: () => runAction('Preferred leader election on all partitions',
        h('p', {}, 'Every partition whose leader is not its preferred replica (the first in AR) moves its leadership back, if that replica is in the ISR.'),
        'elect', {}) }, 'Preferred election (all)'),
      h('button', { type: 'button', onclick: createTopicDialog }, 'Create topic'));
  }
  fill(app, h('h1', {}, 'Cluster'), actions, summary, h('h2', {}, 'Brokers'), brokers, h('h2', {}, 'Health'), health);
  pageRefresh = async () => {
    const c = await api(`/api/cluster?page=${bpage}&size=100`);
    const up = c.brokers_up;
    fill(summary,
      card('Cluster id', c.cluster_id || '–'), card('Controller', c.controller < 0 ? 'none' : 'broker ' + c.controller, 'controller'),
      card('Brokers up', `${up} / ${c.brokers_total}`, 'brokers-up'), card('Topics', c.meta.topics), card('Partitions', c.meta.partitions),
      card('Offline', c.offline, 'offline', c.offline > 0), card('Under-replicated', c.under_replicated, 'under-replicated', c.under_replicated > 0),
      card('Under min ISR', c.under_min_isr, 'under-min-isr', c.under_min_isr > 0),
      card('Last refresh', `${c.meta.took_ms} ms, ${c.meta.requests} requests`, 'refresh-cost'));
    fill(brokers, table('broker-table', ['Id', 'Endpoint', 'Rack', 'Status', 'Leaders', 'Replicas'],
      c.brokers.map((b) => h('tr', { 'data-broker': b.id, class: b.up ? '' : 'down' },
        h('td', {}, b.id, b.id === c.controller ? h('span', { class: 'tag' }, 'controller') : null),
        h('td', {}, b.endpoint || '–'), h('td', {}, b.rack || '–'),
        h('td', { class: 'status' }, b.up ? 'up' : 'down'), h('td', { class: 'c-leaders' }, b.leaders), h('td', { class: 'c-replicas' }, b.replicas)))),
      c.brokers_total > 100 ? pager(c.brokers_total, bpage, 100, (p) => { bpage = p; refresh(); }) : null);
    const hl = await api(`/api/health?kind=${kind}&page=${hpage}&size=50`);
    const tabs = h('div', { class: 'tabs' }, [['under_replicated', 'Under-replicated'], ['under_min_isr', 'Under min ISR'], ['offline', 'Offline']].map(([k, label]) =>
      h('button', { type: 'button', class: k === kind ? 'tab on' : 'tab', onclick: () => { kind = k; hpage = 0; refresh(); } }, label)));
    fill(health, tabs,
      hl.count === 0 ? h('p', { class: 'ok' }, 'none') : table('health-table', ['Topic', 'Partition', 'Leader', 'AR', 'ISR'],
        hl.items.map((p) => h('tr', {}, h('td', {}, topicLink(p.topic)), h('td', {}, p.partition), h('td', {}, p.leader < 0 ? 'none' : p.leader),
          h('td', {}, ids(p.replicas)), h('td', {}, ids(p.isr))))),
      hl.count > 0 ? pager(hl.listed, hpage, 50, (p) => { hpage = p; refresh(); }) : null,
      hl.listed < hl.count ? h('p', { class: 'muted' }, `the first ${hl.listed} of ${hl.count} are listed`) : null);
  };
}

function card(label, value, id, bad) {
  return h('div', { class: bad ? 'card bad' : 'card', id: id ? 'card-' + id : null }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, value));
}

function createTopicDialog() {
  const name = h('input', { id: 'ct-name', required: true, maxlength: 249 });
  const parts = h('input', { id: 'ct-partitions', type: 'number', min: 1, value: 3 });
  const rf = h('input', { id: 'ct-rf', type: 'number', min: 1, value: 1 });
  const cfg = h('input', { id: 'ct-configs', placeholder: 'name=value,name=value' });
  const configs = () => {
    const out = {};
    for (const kv of cfg.value.split(',').map((s) => s.trim()).filter(Boolean)) {
      const i = kv.indexOf('=');
      if (i > 0) out[kv.slice(0, i)] = kv.slice(i + 1);
    }
    return out;
  };
  const body = h('div', {}, field('Name', name), field('Partitions', parts), field('Replication factor', rf), field('Configs', cfg));
  runActionLazy('Create topic', body, 'create-topic', () => ({ topic: name.value, partitions: +parts.value, replication_factor: +rf.value, configs: configs() }));
}

// runActionLazy builds the request after the dialog's fields were filled in.
async function runActionLazy(title, body, name, build) {
  if (!(await confirmDialog(title, body, 'Run'))) return null;
  try {
    const res = await act(name, build());
    notice(res.message);
    refresh();
    return res;
  } catch (e) {
    notice(e.message, true);
    return null;
  }
}

// ---- Topics ----
function topicsPage() {
  const q = h('input', { id: 'topic-filter', type: 'search', placeholder: 'filter topics', oninput: () => { page = 0; refresh(); } });
  const internal = h('input', { id: 'topic-internal', type: 'checkbox', onchange: () => { page = 0; refresh(); } });
  const list = h('div', { id: 'topics' });
  let page = 0;
  fill(app, h('h1', {}, 'Topics'),
    h('div', { class: 'controls' }, q, h('label', {}, internal, ' internal topics'),
      READ_ONLY ? null : h('button', { type: 'button', onclick: createTopicDialog }, 'Create topic')),
    list);
  pageRefresh = async () => {
    const t = await api(`/api/topics?q=${encodeURIComponent(q.value)}&internal=${internal.checked ? 1 : 0}&page=${page}&size=50`);
    fill(list, table('topic-table', ['Topic', 'Partitions', 'RF', 'Size', 'Under-replicated', 'Offline', 'Config overrides'],
      t.topics.map((x) => h('tr', { 'data-topic': x.name },
        h('td', {}, topicLink(x.name), x.internal ? h('span', { class: 'tag' }, 'internal') : null),
        h('td', { class: 'c-partitions' }, x.partitions), h('td', { class: 'c-rf' }, x.replication_factor), h('td', {}, bytes(x.size)),
        h('td', { class: x.under_replicated ? 'warn' : '' }, x.under_replicated), h('td', { class: x.offline ? 'bad' : '' }, x.offline),
        h('td', { class: 'c-overrides' }, x.overrides.map((c) => h('code', {}, `${c.name}=${c.sensitive ? '(sensitive)' : c.value}`)))))),
    pager(t.total, page, 50, (p) => { page = p; refresh(); }));
  };
}

// ---- Topic ----
function topicPage(name) {
  const head = h('div', { id: 'topic-head', class: 'cards' });
  const parts = h('div', { id: 'partitions-box' });
  const cfgs = h('div', { id: 'configs-box' });
  let page = 0;
  const actions = h('div', { class: 'actions' });
  if (!READ_ONLY) {
    const add = h('input', { id: 'ap-count', type: 'number', min: 1, value: 1 });
    actions.append(
      h('button', { type: 'button', id: 'elect-topic', onclick: () => runAction('Preferred leader election for topic ' + name,
        h('p', {}, 'Each partition of ', h('b', {}, name), ' whose leader is not its preferred replica moves its leadership back to it.'),
        'elect', { topic: name }) }, 'Preferred election (topic)'),
      h('button', { type: 'button', onclick: () => runActionLazy('Add partitions to ' + name, field('Partitions to add', add), 'add-partitions',
        () => ({ topic: name, partitions: +add.value })) }, 'Add partitions'),
      h('button', { type: 'button', onclick: () => alterConfigDialog(name) }, 'Alter config'));
  }
  fill(app, h('h1', {}, 'Topic ', h('span', { id: 'topic-name' }, name)), actions, head,
    h('h2', {}, 'Partitions'), h('p', { class: 'legend' }, h('span', { class: 'pref' }, '★'), ' preferred replica · ',
      h('span', { class: 'nonpref' }, 'leader'), ' not the preferred replica · ', h('span', { class: 'osr' }, 'OSR'), ' out of sync · ',
      h('span', { class: 'rep gone' }, 'n'), ' replica on a broker that is down'),
    parts, h('h2', {}, 'Configs'), cfgs);
  pageRefresh = async () => {
    const d = await api(`/api/topics/${encodeURIComponent(name)}?page=${page}&size=1000`);
    const t = d.topic;
    fill(head, card('Partitions', d.partitions_total), card('Replication factor', t.replication_factor),
      card('min.insync.replicas', t.min_insync_replicas), card('Size', bytes(t.size)), card('Topic id', t.id || '–'));
    const rows = t.partitions.map((p) => {
      const nonPref = p.leader >= 0 && p.leader !== p.preferred;
      return h('tr', { 'data-partition': p.partition, class: p.offline ? 'down' : '' },
        h('td', { class: 'c-partition' }, p.partition),
        h('td', { class: 'c-leader' + (nonPref ? ' nonpref' : '') + (p.leader < 0 ? ' bad' : ''), title: nonPref ? 'not the preferred replica ' + p.preferred : null },
          p.leader < 0 ? 'none' : p.leader),
        h('td', { class: 'c-epoch' }, p.leader_epoch),
        h('td', { class: 'c-ar' }, p.replicas.map((r, i) => h('span', {
          class: 'rep' + (i === 0 ? ' pref' : '') + (p.offline_replicas.includes(r) ? ' gone' : ''),
          title: p.offline_replicas.includes(r) ? 'broker ' + r + ' is down' : null,
        }, r, i === 0 ? '★' : ''))),
        h('td', { class: 'c-isr' }, ids(p.isr)),
        h('td', { class: 'c-osr' + (p.osr.length ? ' osr' : '') }, ids(p.osr) || '–'),
        h('td', { class: 'c-lso' }, num(p.log_start_offset)), h('td', { class: 'c-hw' }, num(p.high_watermark)), h('td', {}, bytes(p.size)),
        h('td', { class: 'c-flags' }, p.offline ? h('span', { class: 'tag bad' }, 'offline') : null,
          p.under_min_isr ? h('span', { class: 'tag bad' }, 'under min ISR') : null, p.error ? h('span', { class: 'tag warn' }, p.error) : null),
        h('td', { class: 'row-actions' },
          h('a', { href: `/messages?topic=${encodeURIComponent(name)}&partition=${p.partition}` }, 'browse'),
          READ_ONLY ? null : h('button', { type: 'button', class: 'small elect-partition', onclick: () => runAction(`Preferred election for ${name}-${p.partition}`,
            h('p', {}, `Move the leadership of partition ${p.partition} to its preferred replica ${p.preferred}.`), 'elect', { topic: name, partition: p.partition }) }, 'elect'),
          READ_ONLY ? null : h('button', { type: 'button', class: 'small', onclick: () => deleteRecordsDialog(name, p) }, 'delete records')));
    });
    fill(parts, table('partitions', ['Partition', 'Leader', 'Leader epoch', 'AR', 'ISR', 'OSR', 'Log start', 'High watermark', 'Size', '', ''], rows),
      d.partitions_total > d.size ? pager(d.partitions_total, page, d.size, (p) => { page = p; refresh(); }) : null);
    fill(cfgs, table('configs', ['Name', 'Value', 'Source'], (t.configs || []).map((c) => h('tr', { class: c.source === 'topic' ? 'override' : '' },
      h('td', {}, c.name), h('td', {}, c.sensitive ? '(sensitive)' : c.value), h('td', {}, c.source)))));
  };
}

function alterConfigDialog(topic) {
  const name = h('input', { id: 'ac-name', placeholder: 'retention.ms' });
  const value = h('input', { id: 'ac-value' });
  const del = h('input', { id: 'ac-delete', type: 'checkbox' });
  runActionLazy('Alter config of ' + topic, h('div', {}, field('Config', name), field('Value', value), h('label', {}, del, ' remove the override instead')),
    'alter-config', () => ({ topic, name: name.value, value: del.checked ? null : value.value }));
}

function deleteRecordsDialog(topic, p) {
  const off = h('input', { id: 'dr-offset', type: 'number', min: 0, value: p.high_watermark >= 0 ? p.high_watermark : 0 });
  runActionLazy(`Delete records of ${topic}-${p.partition}`, h('div', {}, h('p', {}, 'Records before this offset are deleted for good; the log start offset moves up to it.'),
    field('Before offset', off)), 'delete-records', () => ({ topic, partition: p.partition, offset: +off.value }));
}

// ---- Groups ----
function groupsPage() {
  const q = h('input', { id: 'group-filter', type: 'search', placeholder: 'filter groups', oninput: () => { page = 0; refresh(); } });
  const list = h('div', { id: 'groups' });
  let page = 0;
  fill(app, h('h1', {}, 'Consumer groups'), h('div', { class: 'controls' }, q), list);
  pageRefresh = async () => {
    const g = await api(`/api/groups?q=${encodeURIComponent(q.value)}&page=${page}&size=50`);
    fill(list, table('group-table', ['Group', 'State', 'Members', 'Protocol type', 'Coordinator'],
      g.groups.map((x) => h('tr', { 'data-group': x.group }, h('td', {}, groupLink(x.group)), h('td', { class: 'c-state' }, x.state),
        h('td', { class: 'c-members' }, x.members), h('td', {}, x.protocol_type), h('td', {}, x.coordinator)))),
    pager(g.total, page, 50, (p) => { page = p; refresh(); }));
  };
}

function lagChart(history) {
  const W = 640, H = 160, P = 32;
  const NS = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('id', 'lag-chart');
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('width', W);
  svg.setAttribute('height', H);
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  el('rect', { x: P, y: 8, width: W - P - 8, height: H - P - 8, class: 'frame' });
  if (history.length === 0) return svg;
  const maxLag = Math.max(1, ...history.map((p) => p.lag));
  const t0 = history[0].at, t1 = Math.max(history[history.length - 1].at, t0 + 1);
  const x = (t) => P + ((t - t0) / (t1 - t0)) * (W - P - 8);
  const y = (l) => H - P - (l / maxLag) * (H - P - 16);
  el('polyline', { points: history.map((p) => `${x(p.at).toFixed(1)},${y(p.lag).toFixed(1)}`).join(' '), class: 'line' });
  for (const p of history.slice(-1)) el('circle', { cx: x(p.at), cy: y(p.lag), r: 3, class: 'dot' });
  el('text', { x: P - 4, y: 18, 'text-anchor': 'end', class: 'axis' }, String(maxLag));
  el('text', { x: P - 4, y: H - P, 'text-anchor': 'end', class: 'axis' }, '0');
  el('text', { x: P, y: H - 10, class: 'axis' }, new Date(t0).toLocaleTimeString());
  el('text', { x: W - 8, y: H - 10, 'text-anchor': 'end', class: 'axis' }, new Date(t1).toLocaleTimeString());
  return svg;
}

function groupPage(name) {
  const head = h('div', { class: 'cards', id: 'group-head' });
  const chart = h('div', { id: 'chart-box' });
  const members = h('div', { id: 'members-box' });
  const offsets = h('div', { id: 'offsets-box' });
  const actions = h('div', { class: 'actions' });
  let topics = [];
  if (!READ_ONLY) {
    actions.append(
      h('button', { type: 'button', id: 'reset-offsets', onclick: () => resetDialog(name, topics) }, 'Reset offsets…'),
      h('button', { type: 'button', id: 'delete-group', onclick: () => runAction('Delete group ' + name,
        h('p', {}, 'The group and its committed offsets are deleted. Only a group without members can be deleted.'), 'delete-group', { group: name }) }, 'Delete group'));
  }
  fill(app, h('h1', {}, 'Group ', h('span', { id: 'group-name' }, name)), actions, head,
    h('h2', {}, 'Lag over time'), chart, h('h2', {}, 'Members'), members, h('h2', {}, 'Lag per partition'), offsets);
  pageRefresh = async () => {
    const d = await api('/api/groups/' + encodeURIComponent(name));
    const g = d.group;
    topics = [...new Set(g.offsets.map((o) => o.topic))];
    fill(head, card('State', g.state, 'state'), card('Protocol', g.protocol || '–'), card('Coordinator', g.coordinator),
      card('Members', g.members.length, 'members'), card('Total lag', g.total_lag, 'total-lag', g.total_lag > 0));
    fill(chart, lagChart(d.history));
    fill(members, g.members.length === 0 ? h('p', { class: 'muted' }, 'no members') : table('member-table', ['Member', 'Client id', 'Host', 'Assigned'],
      g.members.map((m) => h('tr', {}, h('td', {}, m.member_id), h('td', {}, m.client_id), h('td', {}, m.host),
        h('td', {}, m.assigned.map((a) => h('code', {}, `${a.topic} [${a.partitions.join(',')}]`)))))));
    fill(offsets, table('offset-table', ['Topic', 'Partition', 'Committed', 'Log end', 'Lag', 'Member'],
      g.offsets.map((o) => h('tr', { 'data-tp': `${o.topic}-${o.partition}` }, h('td', {}, topicLink(o.topic)), h('td', {}, o.partition),
        h('td', { class: 'c-committed' }, num(o.committed_offset)), h('td', { class: 'c-end' }, num(o.log_end_offset)),
        h('td', { class: 'c-lag' + (o.lag > 0 ? ' warn' : '') }, o.lag), h('td', {}, o.client_id || '–')))));
  };
}

async function resetDialog(group, topics) {
  const topic = h('select', { id: 'rs-topic' }, topics.map((t) => h('option', { value: t }, t)));
  const part = h('input', { id: 'rs-partition', placeholder: 'all' });
  const to = h('select', { id: 'rs-to' }, ['earliest', 'latest', 'offset', 'datetime'].map((k) => h('option', { value: k }, k)));
  const val = h('input', { id: 'rs-value', placeholder: 'offset, or 2026-01-02T15:04' });
  const body = h('div', {}, field('Topic', topic), field('Partition', part), field('To', to), field('Offset or time', val),
    h('p', { class: 'muted' }, 'A dry run shows the plan first.'));
  if (!(await confirmDialog('Reset offsets of ' + group, body, 'Dry run'))) return;
  const req = { group, topic: topic.value, to: to.value };
  if (part.value.trim() !== '') req.partition = +part.value;
  if (to.value === 'offset') req.offset = +val.value;
  if (to.value === 'datetime') req.timestamp = new Date(val.value).getTime();
  let plan;
  try { plan = await act('reset-offsets', req); } catch (e) { notice(e.message, true); return; }
  const planTable = table('reset-plan', ['Partition', 'Current', 'New', 'Log start', 'Log end'],
    plan.rows.map((r) => h('tr', {}, h('td', {}, r.partition), h('td', {}, num(r.current)), h('td', { class: 'c-new' }, r.new), h('td', {}, r.log_start), h('td', {}, r.log_end))));
  await runAction('Apply this reset?', h('div', {}, h('p', {}, plan.message), planTable), 'reset-offsets', { ...req, execute: true });
}

// ---- Messages ----
function messagesPage() {
  const params = new URLSearchParams(location.search);
  const topic = h('input', { id: 'm-topic', value: params.get('topic') || '', placeholder: 'topic' });
  const part = h('input', { id: 'm-partition', type: 'number', min: 0, value: params.get('partition') || 0 });
  const from = h('select', { id: 'm-from' }, h('option', { value: 'offset' }, 'from offset'), h('option', { value: 'timestamp' }, 'from time'));
  const start = h('input', { id: 'm-start', value: '0', placeholder: 'offset, or 2026-01-02T15:04' });
  const limit = h('input', { id: 'm-limit', type: 'number', min: 1, max: 500, value: 50 });
  const filter = h('input', { id: 'm-filter', type: 'search', maxlength: 200, placeholder: 'contains…' });
  const mode = h('select', { id: 'm-mode' }, ['', 'json', 'text', 'hex'].map((k) => h('option', { value: k }, k || 'auto')));
  const out = h('div', { id: 'messages' });
  const query = () => {
    const q = new URLSearchParams({ topic: topic.value, partition: part.value, limit: limit.value, filter: filter.value, mode: mode.value });
    if (from.value === 'offset') q.set('offset', start.value || '0');
    else q.set('timestamp', String(new Date(start.value).getTime()));
    return q;
  };
  const browse = async () => {
    try {
      const d = await api('/api/messages?' + query());
      fill(out, h('p', { class: 'muted', id: 'm-count' }, `${d.records.length} record(s); high watermark ${d.high_watermark}`),
        table('message-table', ['Offset', 'Timestamp', 'Key', 'Value', 'Headers'], d.records.map((r) => h('tr', { 'data-offset': r.offset },
          h('td', {}, r.offset), h('td', {}, when(r.timestamp)), h('td', { class: 'c-key' }, shown(r.key)), h('td', { class: 'c-value' }, shown(r.value)),
          h('td', { class: 'c-headers' }, r.headers.map((x) => h('div', {}, h('b', {}, x.key), ': ', shown(x.value))))))));
    } catch (e) { fill(out, h('p', { class: 'bad' }, e.message)); }
  };
  const exportLink = h('a', { id: 'm-export', href: '#', onclick: (ev) => { ev.currentTarget.href = '/api/messages?' + query() + '&format=jsonl'; } }, 'Export JSON lines');
  fill(app, h('h1', {}, 'Messages'),
    h('form', { class: 'controls', onsubmit: (ev) => { ev.preventDefault(); browse(); } },
      topic, part, from, start, limit, filter, mode, h('button', { type: 'submit', id: 'm-browse' }, 'Browse'), exportLink),
    out);
  pageRefresh = null;
  if (topic.value) browse();
}

function shown(b) {
  if (b.kind === 'null') return h('span', { class: 'muted' }, 'null');
  return h('pre', { class: 'kind-' + b.kind }, b.text, b.truncated ? h('span', { class: 'muted' }, `\n… ${b.size} bytes in all`) : null);
}

// ---- Controller & ZooKeeper ----
function zkPage() {
  const params = new URLSearchParams(location.search);
  const path = params.get('path') || '/';
  const ctrl = h('div', { id: 'zk-controller', class: 'cards' });
  const node = h('div', { id: 'znode' });
  fill(app, h('h1', {}, 'Controller & ZooKeeper'), ctrl, h('h2', {}, 'Znode ', h('code', { id: 'znode-path' }, path)), node);
  pageRefresh = async () => {
    const d = await api('/api/zookeeper?path=' + encodeURIComponent(path));
    if (!d.enabled) {
      fill(ctrl, h('p', { class: 'muted' }, 'Start ktool ui with --zookeeper host:port[/chroot] to see /controller, /controller_epoch and the znode tree.'));
      fill(node);
      return;
    }
    const c = d.controller;
    if (c) {
      fill(ctrl, card('/controller broker', c.broker_id < 0 ? 'none (election under way)' : c.broker_id, 'zk-broker'),
        card('/controller_epoch', c.epoch, 'zk-epoch'), card('Elected', c.broker_id < 0 ? '–' : c.timestamp),
        card('Session', c.session || '–'), card('Epoch znode version', c.epoch_zk_version));
    } else {
      fill(ctrl, h('p', { class: 'bad' }, d.controller_error || 'no controller znodes'));
    }
    const n = d.node;
    const parts = n.path.split('/').filter(Boolean);
    const crumbs = [h('a', { href: '/zookeeper?path=/' }, '/')];
    parts.forEach((p, i) => crumbs.push(h('a', { href: '/zookeeper?path=' + encodeURIComponent('/' + parts.slice(0, i + 1).join('/')) }, p), i < parts.length - 1 ? ' / ' : ''));
    const base = n.path === '/' ? '' : n.path;
    fill(node, h('div', { class: 'crumbs' }, crumbs),
      h('div', { class: 'split' },
        h('div', {}, h('h3', {}, `Children (${n.children_total})`), h('ul', { id: 'znode-children' },
          n.children.map((k) => h('li', {}, h('a', { href: '/zookeeper?path=' + encodeURIComponent(base + '/' + k) }, k))))),
        h('div', {}, h('h3', {}, 'Data'), h('pre', { id: 'znode-data' }, n.data === null ? 'null' : typeof n.data === 'string' ? n.data : JSON.stringify(n.data, null, 2)),
          n.data_truncated ? h('p', { class: 'muted' }, 'truncated') : null,
          h('h3', {}, 'Stat'), table('znode-stat', ['Field', 'Value'], Object.entries(n.stat).map(([k, v]) => h('tr', {}, h('td', {}, k), h('td', {}, v)))))));
  };
}

// ---- Router ----
function route() {
  const p = location.pathname;
  let nav = 'cluster';
  if (p === '/topics') { nav = 'topics'; topicsPage(); }
  else if (p.startsWith('/topics/')) { nav = 'topics'; topicPage(decodeURIComponent(p.slice(8))); }
  else if (p === '/groups') { nav = 'groups'; groupsPage(); }
  else if (p.startsWith('/groups/')) { nav = 'groups'; groupPage(decodeURIComponent(p.slice(8))); }
  else if (p === '/messages') { nav = 'messages'; messagesPage(); }
  else if (p === '/zookeeper') { nav = 'zookeeper'; zkPage(); }
  else clusterPage();
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('on', a.dataset.nav === nav);
}

route();
connect();
