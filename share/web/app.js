/*
 * app.js - the goald dashboard's router and its own pages: sign in, the
 * overview (the daemon, its nodes, queues, breakers, escalations, goals
 * by status, the last 24 hours; live over the event stream), the goals
 * list (filtered by status, searched by title, in pages) and the submit
 * form.  lib.js holds what pages share, pages.js the goal, item and
 * escalation pages.
 */
(function () {
  'use strict';

  var G = window.goald;
  var el = G.el, append = G.append, clear = G.clear, badge = G.badge, api = G.api;
  var errorText = G.errorText, short = G.short, num = G.num;
  var main = document.getElementById('main');
  var viewAbort = null; /* aborts the current view's streams */

  /* ---- sign in and out ---- */

  function signOut(why) {
    sessionStorage.removeItem(G.TOKEN_KEY);
    G.forgetScopes();
    route(why);
  }
  G.onRefused = signOut;

  function viewLogin(why) {
    var input = el('input', {type: 'password', name: 'token', id: 'token', autocomplete: 'off',
                             required: 'required', placeholder: 'gld_...'});
    var err = el('p', {class: 'error', id: 'login-error', text: why || ''});
    var form = el('form', {class: 'stack card', id: 'login'},
      el('h1', {text: 'Sign in'}),
      el('p', {class: 'muted', text: 'A token from `goald token create` (scope read, and submit or ' +
                                    'resolve to act). It is kept in this tab only.'}),
      el('label', {for: 'token'}, 'Token', input), err,
      el('button', {type: 'submit', class: 'primary', text: 'Sign in'}));
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      sessionStorage.setItem(G.TOKEN_KEY, input.value.trim());
      G.forgetScopes();
      api('GET', '/v1/status').then(function (r) {
        if (r.status !== 200) {
          if (r.status !== 401) err.textContent = errorText(r.body, r.status);
          return;
        }
        /* the overview is the first page after signing in */
        if (location.hash && location.hash !== '#/') location.hash = '#/';
        else route();
      });
    });
    main.appendChild(form);
    input.focus();
  }

  /* ---- the overview ---- */

  var HEALTH = {alive: 'running', stale: 'queued', dead: 'failed'}; /* their colours */

  function healthBadge(h) {
    return el('span', {class: 'badge health ' + G.statusClass(HEALTH[h] || '') , 'data-health': h || '', text: h || '?'});
  }

  function lanesText(l) {
    l = l || {};
    function one(n) {
      var x = l[n] || {};
      return n + ' ' + (x.running === undefined ? '?' : x.running) + '/' + (x.cap === undefined ? '?' : x.cap);
    }
    return one('plan') + ' · ' + one('work');
  }

  function tile(id, label, value, extra) {
    return el('div', {class: 'tile card', id: id}, el('div', {class: 'tile-label muted', text: label}),
              el('div', {class: 'tile-value', text: value}), extra || null);
  }

  function viewOverview(signal) {
    var box = el('div', {id: 'overview'});
    append(main, [el('h1', {text: 'Overview'}), box]);
    function load() {
      if (signal.aborted) return;
      G.loadInto('/v1/overview', signal, [box], function (o) { renderOverview(box, o); });
    }
    load();
    /* tick ages grow without events: a look every 5 s too */
    var timer = setInterval(load, 5000);
    signal.addEventListener('abort', function () { clearInterval(timer); });
    G.streamEvents('?since=1s', G.debounce(load, 300), signal);
  }

  function renderOverview(box, o) {
    var d = o.daemon || {}, q = o.queues || {}, day = o.last_24h || {}, goals = o.goals || {};
    var nodes = o.nodes || [];
    append(box, [
      el('div', {class: 'card', id: 'daemon'},
        el('p', null, el('strong', {text: 'Daemon '}), healthBadge(d.health),
           el('span', {class: 'muted', text: ' ' + d.state + (d.pid ? ' · pid ' + d.pid : '') +
                       (d.host ? ' · ' + d.host : '') +
                       (d.tick_age_ms !== undefined ? ' · last tick ' + G.ago(d.tick_age_ms) + ' ago' : '') +
                       ' · goald ' + (o.version || '?')}))),
      el('div', {class: 'tiles'},
        tile('q-plan', 'plan queue', num(q.plan)), tile('q-work', 'work queue', num(q.work)),
        tile('q-wait', 'waiting on dependencies', num(q.waiting_on_dependencies)),
        el('a', {href: '#/escalations', class: 'tile card' + (o.open_escalations > 0 ? ' alert' : ''), id: 'open-escalations'},
           el('div', {class: 'tile-label muted', text: 'open escalations'}),
           el('div', {class: 'tile-value', text: num(o.open_escalations)})),
        tile('day-failed', 'failed runs, 24 h', num(day.runs_failed)),
        tile('day-tokens', 'tokens, 24 h', num(day.tokens)),
        tile('day-cost', 'cost, 24 h', G.usd(day.cost_usd))),
      el('h2', {text: 'Goals by status'}),
      el('div', {class: 'tiles', id: 'goal-counts'}, Object.keys(goals).map(function (s) {
        return el('a', {class: 'tile card', href: '#/goals?status=' + encodeURIComponent(s), 'data-status': s},
                  el('div', {class: 'tile-label'}, badge(s)), el('div', {class: 'tile-value', text: num(goals[s])}));
      })),
      el('h2', {text: 'Running now'}),
      (o.running || []).length ? el('ul', {class: 'list card', id: 'running'}, o.running.map(function (j) {
        var li = G.jobLine(j);
        li.insertBefore(el('a', {href: G.goalHref(j.goal_id), class: 'job-goal', text: j.goal_title || short(j.goal_id)}),
                        li.firstChild);
        li.insertBefore(document.createTextNode(' '), li.childNodes[1]);
        return li;
      })) : el('p', {class: 'muted', id: 'running', text: 'Nothing runs now.'}),
      el('h2', {text: 'Nodes'}),
      nodes.length ? el('div', {class: 'table-wrap'}, el('table', {id: 'nodes'},
        el('tr', null, ['node', 'health', 'version', 'lanes busy/cap', 'host', 'last tick'].map(function (h) {
          return el('th', {text: h});
        })),
        nodes.map(function (n) {
          var ver = n.version || (n.lanes && n.lanes.version) || '-';
          return el('tr', {'data-node': n.node_id},
            el('td', null, el('code', {text: n.node_id || '-'})), el('td', null, healthBadge(n.health)),
            el('td', {text: String(ver)}), el('td', {text: lanesText(n.lanes)}), el('td', {text: n.host || ''}),
            el('td', {text: G.ago(n.tick_age_ms) + ' ago'}));
        }))) : el('p', {class: 'muted', id: 'nodes', text: 'No daemon has ever beaten here.'}),
      el('h2', {text: 'Breakers'}),
      (o.breakers || []).length ? el('ul', {class: 'list', id: 'breakers'}, o.breakers.map(function (b) {
        return el('li', {class: 'card'}, badge(b.state), ' ', el('code', {text: b.error_class}),
                  el('span', {class: 'muted', text: ' · ' + b.failures + ' failures'}));
      })) : el('p', {class: 'muted', id: 'breakers', text: 'All closed.'}),
      o.last_error ? [el('h2', {text: 'Last error'}),
        el('div', {class: 'card', id: 'last-error'},
          el('p', null, el('a', {href: G.goalHref(o.last_error.goal_id), text: 'goal ' + short(o.last_error.goal_id)}),
             el('span', {class: 'muted', text: ' · ' + o.last_error.time})),
          el('pre', {text: o.last_error.message}))] : null
    ]);
  }

  /* ---- the goals list ---- */

  var STATUSES = ['scheduled', 'queued', 'active', 'blocked', 'completed', 'cancelled'];
  var PAGE = 25;

  function goalRow(g) {
    var p = g.progress || {};
    return el('li', {class: 'card goal-row' + (g.partial ? ' partial' : ''), 'data-goal-id': g.id},
      el('a', {class: 'title', href: G.goalHref(g.id), text: g.title}),
      el('span', null, badge(g.status), g.partial ? [' ', G.partialBadge()] : null),
      G.progressBar(p.percent, g.partial),
      el('span', {class: 'meta muted'}, G.progressText(p) + ' · ' + short(g.id)));
  }

  /* the list's state from the hash's query: status, q, cursor */
  function listParams(query) {
    var u = new URLSearchParams(query || '');
    var limit = Number(u.get('limit'));
    return {status: u.get('status') || '', q: u.get('q') || '', cursor: u.get('cursor') || '',
            limit: limit >= 1 && limit <= 100 ? Math.floor(limit) : PAGE};
  }

  function listHash(p) {
    var u = new URLSearchParams();
    if (p.status) u.set('status', p.status);
    if (p.q) u.set('q', p.q);
    if (p.cursor) u.set('cursor', p.cursor);
    if (p.limit && p.limit !== PAGE) u.set('limit', String(p.limit));
    var s = u.toString();
    return '#/goals' + (s ? '?' + s : '');
  }

  /* the cursor of a Link: <...cursor=ID...>; rel="next" */
  function nextCursor(link) {
    var m = /<([^>]*)>\s*;\s*rel="next"/.exec(link || '');
    if (!m) return '';
    return new URL(m[1], location.href).searchParams.get('cursor') || '';
  }

  function viewGoals(signal, query) {
    var p = listParams(query);
    var list = el('ul', {class: 'list', id: 'goals'});
    var status = el('p', {class: 'error', id: 'goals-error'});
    var sel = el('select', {id: 'goals-status', 'aria-label': 'status'}, el('option', {value: '', text: 'every status'}),
                 STATUSES.map(function (s) { return el('option', {value: s, text: s}); }));
    sel.value = p.status;
    var search = el('input', {type: 'search', id: 'goals-q', placeholder: 'search titles', value: p.q,
                              'aria-label': 'search titles'});
    var pager = el('p', {class: 'pager', id: 'pager'});
    append(main, [el('h1', {text: 'Goals'}),
                  el('div', {class: 'filters'}, el('label', null, 'Status', sel), el('label', null, 'Title', search),
                     el('a', {href: '#/submit', class: 'button', text: 'Submit a goal'})),
                  status, list, pager]);

    function load() {
      if (signal.aborted) return;
      var u = new URLSearchParams({limit: String(p.limit)});
      if (p.status) u.set('status', p.status);
      if (p.q) u.set('q', p.q);
      if (p.cursor) u.set('cursor', p.cursor);
      api('GET', '/v1/goals?' + u.toString()).then(function (r) {
        if (signal.aborted) return;
        if (r.status !== 200) { status.textContent = errorText(r.body, r.status); return; }
        status.textContent = '';
        clear(list);
        clear(pager);
        if (!r.body.length) list.appendChild(el('li', {class: 'muted', id: 'no-goals',
          text: p.status || p.q ? 'No goal matches.' : 'No goals yet.'}));
        r.body.forEach(function (g) { list.appendChild(goalRow(g)); });
        var next = nextCursor(r.link);
        var base = {status: p.status, q: p.q, limit: p.limit};
        if (p.cursor) append(pager, el('a', {href: listHash(base), id: 'first-page', text: '← first page'}));
        base.cursor = next;
        if (next) append(pager, [' ', el('a', {href: listHash(base), id: 'next-page', text: 'next page →'})]);
      });
    }
    /* a filter change starts again at the first page; the hash follows
     * (replaceState: no hashchange, the search box keeps its focus) */
    function refilter() {
      p = {status: sel.value, q: search.value.trim(), cursor: '', limit: p.limit};
      history.replaceState(null, '', listHash(p));
      load();
    }
    sel.addEventListener('change', refilter);
    search.addEventListener('input', G.debounce(refilter, 300));
    load();
    G.streamEvents('?since=5s', function (ev) { if (ev.goal_id) refresh(); }, signal);
    var refresh = G.debounce(load, 250);
  }

  /* ---- submit ---- */

  function viewSubmit() {
    append(main, [el('h1', {text: 'Submit a goal'}), submitForm()]);
  }

  var SUBMIT_FIELDS = [
    {name: 'title', label: 'Title', wide: true, required: true},
    {name: 'description', label: 'Description', wide: true, area: true},
    {name: 'repo', label: 'Repository (path on the server)'},
    {name: 'base_branch', label: 'Base branch'},
    {name: 'success_criteria', label: 'Success criteria (one a line)', wide: true, area: true},
    {name: 'budget.max_tokens', label: 'Budget: max tokens', type: 'number'},
    {name: 'budget.max_cost_usd', label: 'Budget: max cost (USD)', type: 'number', step: 'any'},
    {name: 'budget.max_hours', label: 'Budget: max hours', type: 'number', step: 'any'}
  ];

  function fieldId(name) { return 'f-' + name.replace(/\./g, '-'); }

  /* the goal JSON of the form's filled fields */
  function goalFromForm(form) {
    var g = {};
    SUBMIT_FIELDS.forEach(function (f) {
      var v = form.elements[f.name].value.trim();
      if (!v) return;
      if (f.name === 'success_criteria') {
        g.success_criteria = v.split('\n').map(function (s) { return s.trim(); })
                              .filter(function (s) { return s; });
      } else if (f.name.indexOf('budget.') === 0) {
        g.budget = g.budget || {};
        g.budget[f.name.slice(7)] = Number(v);
      } else {
        g[f.name] = v;
      }
    });
    return g;
  }

  function submitForm() {
    var general = el('p', {class: 'error', id: 'submit-error'});
    var fields = el('div', {class: 'fields'});
    SUBMIT_FIELDS.forEach(function (f) {
      var id = fieldId(f.name);
      var input = f.area ? el('textarea', {name: f.name, id: id, rows: 3})
                         : el('input', {name: f.name, id: id, type: f.type || 'text', step: f.step,
                                        min: f.type === 'number' ? '0' : null});
      fields.appendChild(el('div', {class: f.wide ? 'wide' : ''},
        el('label', {for: id}, f.label, input),
        el('span', {class: 'error', 'data-error-for': f.name})));
    });
    var button = el('button', {type: 'submit', class: 'primary', text: 'Submit goal'});
    var roots = el('p', {class: 'muted', id: 'submit-roots'});
    var form = el('form', {class: 'stack', id: 'submit', novalidate: 'novalidate'}, roots, fields, general, button);
    /* what this server lets a submitted goal reach (http.repos, http.remotes) */
    api('GET', '/v1/intake').then(function (r) {
      if (r.status !== 200 || !r.body) return;
      if (!r.body.submit) {
        roots.className = 'error';
        roots.textContent = 'Submitting goals here is off: the operator has not set http.repos.';
        button.disabled = true;
        return;
      }
      roots.textContent = 'Repositories this server accepts: under ' + r.body.repos.join(', ') +
        '. Publish remotes (as a path or URL): ' +
        (r.body.remotes.length ? 'under ' + r.body.remotes.join(', ') : 'none; a remote name only') + '.';
    });
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      showFieldErrors(form, general, []);
      button.disabled = true;
      api('POST', '/v1/goals', goalFromForm(form)).then(function (r) {
        button.disabled = false;
        if (r.status === 201) {
          form.reset();
          general.className = 'ok';
          clear(general);
          append(general, ['Submitted ', el('a', {href: G.goalHref(r.body.id), id: 'submitted-link',
                                                  text: short(r.body.id)}), '.']);
          return;
        }
        general.className = 'error';
        var errs = r.body && r.body.error ? (r.body.error.errors || [r.body.error]) : [];
        if (!errs.length) general.textContent = errorText(r.body, r.status);
        showFieldErrors(form, general, errs);
      });
    });
    return el('div', {class: 'card', id: 'submit-box'}, form);
  }

  /* each error next to its field (budget.max_tokens, title, ...); those
   * about no field of the form in the general line */
  function showFieldErrors(form, general, errs) {
    var spans = form.querySelectorAll('[data-error-for]');
    Array.prototype.forEach.call(spans, function (s) {
      s.textContent = '';
      var input = form.elements[s.getAttribute('data-error-for')];
      if (input) input.removeAttribute('aria-invalid');
    });
    var rest = [];
    errs.forEach(function (e) {
      var span = null;
      Array.prototype.forEach.call(spans, function (s) {
        if (e.field && s.getAttribute('data-error-for') === e.field) span = s;
      });
      if (span) {
        span.textContent = (span.textContent ? span.textContent + '; ' : '') + e.message;
        form.elements[e.field].setAttribute('aria-invalid', 'true');
      } else {
        rest.push(e.message);
      }
    });
    if (rest.length) general.textContent = rest.join('; ');
  }

  /* ---- the router ---- */

  function route(why) {
    if (viewAbort) viewAbort.abort();
    viewAbort = new AbortController();
    var signal = viewAbort.signal;
    clear(main);
    G.setLive(false);
    var nav = document.getElementById('nav');
    if (!G.token()) {
      nav.className = 'hidden';
      viewLogin(typeof why === 'string' ? why : '');
      return;
    }
    nav.className = '';
    var h = location.hash.replace(/^#/, '') || '/';
    var qi = h.indexOf('?'), query = qi >= 0 ? h.slice(qi + 1) : '';
    if (qi >= 0) h = h.slice(0, qi);
    var m, v = G.views;
    Array.prototype.forEach.call(nav.querySelectorAll('a'), function (a) {
      var target = a.getAttribute('href').replace(/^#/, '');
      a.className = (target === '/' ? h === '/' : h.indexOf(target) === 0) ? 'current' : '';
    });
    if ((m = h.match(/^\/goals\/([^/]+)\/items\/([^/]+)$/)))
      v.item(main, decodeURIComponent(m[1]), decodeURIComponent(m[2]), signal);
    else if ((m = h.match(/^\/goals\/([^/]+)$/)))
      v.goal(main, decodeURIComponent(m[1]), signal);
    else if (h === '/goals')
      viewGoals(signal, query);
    else if (h === '/submit')
      viewSubmit();
    else if (h === '/escalations')
      v.escalations(main, signal);
    else
      viewOverview(signal);
  }

  document.getElementById('signout').addEventListener('click', function () { signOut(''); });
  window.addEventListener('hashchange', function () { route(); });
  route();
})();
