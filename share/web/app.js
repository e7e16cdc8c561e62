/*
 * app.js - the goald dashboard: plain JavaScript, no framework, no build.
 *
 * Everything shown comes from the /v1 API (docs/http.md) and much of it
 * was written by a model: it is text, always.  The DOM is built with
 * createElement and textContent only (never innerHTML: the CSP's Trusted
 * Types would refuse it anyway), links are made from ids through
 * encodeURIComponent, and a URL from the API becomes a link only when it
 * is http(s).
 *
 * The token lives in sessionStorage and goes as "Authorization: Bearer"
 * on every request; there are no cookies.  The event stream is read with
 * fetch() (EventSource cannot send the header) and its SSE framing parsed
 * here, reconnecting with Last-Event-ID after a drop.
 */
(function () {
  'use strict';

  var TOKEN_KEY = 'goald.token';
  var main = document.getElementById('main');
  var live = document.getElementById('live');
  var viewAbort = null; /* aborts the current view's streams */

  /* ---- DOM ---- */

  /* el('div', {class: 'x', href: '#/'}, child, 'text', ...): children that
   * are strings become text nodes. */
  function el(tag, attrs) {
    var e = document.createElement(tag);
    setAttrs(e, attrs);
    for (var i = 2; i < arguments.length; i++) append(e, arguments[i]);
    return e;
  }

  var SVG_NS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG_NS, tag);
    setAttrs(e, attrs);
    for (var i = 2; i < arguments.length; i++) append(e, arguments[i]);
    return e;
  }

  function setAttrs(e, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === 'text') e.textContent = String(v);
      else e.setAttribute(k, String(v));
    });
  }

  function append(parent, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { append(parent, x); }); return; }
    parent.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function badge(status) {
    return el('span', {class: 'badge ' + statusClass(status), text: status || '?'});
  }

  /* a class from a status: only letters and _ (the status is ours, but
   * never trust a string that reaches an attribute) */
  function statusClass(s) {
    return 'st-' + String(s || '').replace(/[^a-z_]/g, '');
  }

  function progressBar(percent) {
    var p = Math.max(0, Math.min(100, Number(percent) || 0));
    var fill = el('div', {class: 'fill'});
    var bar = el('div', {class: 'bar' + (p >= 100 ? ' full' : ''), role: 'progressbar',
                         'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': p}, fill);
    fill.style.width = p + '%';
    return bar;
  }

  function goalHref(id) { return '#/goals/' + encodeURIComponent(id); }
  function itemHref(gid, key) { return goalHref(gid) + '/items/' + encodeURIComponent(key); }

  /* a link for a URL from the API, only when it is http or https */
  function safeLink(url, label) {
    var u;
    try { u = new URL(String(url), location.href); } catch (e) { return label || String(url); }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return label || String(url);
    return el('a', {href: u.href, rel: 'noopener noreferrer', target: '_blank', text: label || u.href});
  }

  function short(id) { return String(id || '').slice(0, 8); }

  /* ---- the API ---- */

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  function headers(extra) {
    var h = {'Authorization': 'Bearer ' + token()};
    Object.keys(extra || {}).forEach(function (k) { h[k] = extra[k]; });
    return h;
  }

  /* {status, body} for METHOD path (body: a JSON value or undefined).  A
   * 401 signs out: the token is wrong or revoked. */
  function api(method, path, body) {
    var opts = {method: method, headers: headers(body === undefined ? {} : {'Content-Type': 'application/json'}),
                credentials: 'omit', cache: 'no-store'};
    if (body !== undefined) opts.body = JSON.stringify(body);
    return fetch(path, opts).then(function (r) {
      return r.text().then(function (t) {
        var v = null;
        try { v = t ? JSON.parse(t) : null; } catch (e) { v = null; }
        if (r.status === 401) signOut('the token was refused: ' + errorText(v, r.status));
        return {status: r.status, body: v};
      });
    });
  }

  function errorText(v, status) {
    return v && v.error && v.error.message ? v.error.message : 'HTTP ' + status;
  }

  /* GET path for a page's boxes: once answered (unless signal aborted:
   * the page was left), the boxes are emptied, then render(body) fills
   * them, or the error is shown in the first. */
  function loadInto(path, signal, boxes, render) {
    return api('GET', path).then(function (r) {
      if (signal.aborted) return;
      boxes.forEach(function (b) { clear(b); });
      if (r.status !== 200) {
        boxes[0].appendChild(el('p', {class: 'error', text: errorText(r.body, r.status)}));
        return;
      }
      render(r.body);
    });
  }

  /* ---- Server-Sent Events over fetch ---- */

  /* Read /v1/events?query until signal aborts, calling onEvent(obj) for
   * each event; after a drop, reconnect with Last-Event-ID (no event lost
   * or repeated: the server's ids only grow). */
  function streamEvents(query, onEvent, signal) {
    var lastId = null;

    function connect() {
      if (signal.aborted) return;
      var h = headers(lastId !== null ? {'Last-Event-ID': lastId} : {});
      fetch('/v1/events' + query, {headers: h, signal: signal, credentials: 'omit', cache: 'no-store'})
        .then(function (r) {
          if (r.status === 401) { signOut('the token was refused'); return; }
          if (!r.ok || !r.body) throw new Error('events: HTTP ' + r.status);
          setLive(true);
          return readFrames(r.body.getReader());
        })
        .then(retry, function (e) { if (!signal.aborted) retry(e); });
    }

    function retry() {
      setLive(false);
      if (!signal.aborted && token()) setTimeout(connect, 1000);
    }

    function readFrames(reader) {
      var dec = new TextDecoder();
      var buf = '';
      function pump() {
        return reader.read().then(function (res) {
          if (res.done) return;
          buf += dec.decode(res.value, {stream: true}).replace(/\r\n?/g, '\n');
          var cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            dispatch(buf.slice(0, cut));
            buf = buf.slice(cut + 2);
          }
          return pump();
        });
      }
      return pump();
    }

    /* one frame: "id:", "data:" lines; comments (":") and others ignored */
    function dispatch(frame) {
      var data = [], id = null;
      frame.split('\n').forEach(function (line) {
        var colon = line.indexOf(':');
        if (colon === 0) return;
        var field = colon < 0 ? line : line.slice(0, colon);
        var value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(value);
        else if (field === 'id') id = value;
      });
      if (id !== null) lastId = id;
      if (!data.length) return;
      var ev;
      try { ev = JSON.parse(data.join('\n')); } catch (e) { return; }
      onEvent(ev);
    }

    connect();
  }

  function setLive(on) {
    live.textContent = on ? 'live' : 'offline';
    live.className = 'live' + (on ? ' on' : '');
  }

  /* call fn at most once per ms, after the last call */
  function debounce(fn, ms) {
    var t = null;
    return function () {
      if (t) clearTimeout(t);
      t = setTimeout(function () { t = null; fn(); }, ms);
    };
  }

  /* ---- sign in and out ---- */

  function signOut(why) {
    sessionStorage.removeItem(TOKEN_KEY);
    route(why);
  }

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
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      api('GET', '/v1/status').then(function (r) {
        if (r.status === 200) route();
        else if (r.status !== 401) err.textContent = errorText(r.body, r.status);
      });
    });
    main.appendChild(form);
    input.focus();
  }

  /* ---- the goals list ---- */

  function goalRow(g) {
    var p = g.progress || {};
    return el('li', {class: 'card goal-row', 'data-goal-id': g.id},
      el('a', {class: 'title', href: goalHref(g.id), text: g.title}),
      badge(g.status),
      progressBar(p.percent),
      el('span', {class: 'meta muted'},
         (p.items_done || 0) + (p.items_skipped ? ' + ' + p.items_skipped + ' skipped' : '') +
         ' of ' + (p.items_total || 0) + ' items done · ' + (p.percent || 0) + ' % · ' + short(g.id)));
  }

  function viewGoals(signal) {
    var list = el('ul', {class: 'list', id: 'goals'});
    var status = el('p', {class: 'error', id: 'goals-error'});
    append(main, [el('h1', {text: 'Goals'}), submitForm(), status, list]);

    function load() {
      api('GET', '/v1/goals?limit=100').then(function (r) {
        if (signal.aborted) return;
        if (r.status !== 200) { status.textContent = errorText(r.body, r.status); return; }
        status.textContent = '';
        clear(list);
        if (!r.body.length) list.appendChild(el('li', {class: 'muted', text: 'No goals yet.'}));
        r.body.forEach(function (g) { list.appendChild(goalRow(g)); });
      });
    }
    load();
    var refresh = debounce(load, 250);
    streamEvents('?since=5s', function (ev) { if (ev.goal_id) refresh(); }, signal);
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
          general.textContent = 'Submitted ' + short(r.body.id) + '.';
          return;
        }
        general.className = 'error';
        var errs = r.body && r.body.error ? (r.body.error.errors || [r.body.error]) : [];
        if (!errs.length) general.textContent = errorText(r.body, r.status);
        showFieldErrors(form, general, errs);
      });
    });
    return el('details', {class: 'card', id: 'submit-box', open: 'open'},
              el('summary', {text: 'Submit a goal'}), form);
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

  /* ---- a goal ---- */

  function viewGoal(gid, signal) {
    var head = el('div', {id: 'goal-head'});
    var body = el('div', {id: 'goal-body'});
    var events = el('ul', {class: 'events', id: 'events'});
    append(main, [head, body, el('h2', {text: 'Live events'}), events]);

    function load() {
      loadInto('/v1/goals/' + encodeURIComponent(gid), signal, [head, body], function (report) {
        renderReport(head, body, report);
      });
    }
    load();
    var refresh = debounce(load, 250);
    streamEvents('?goal=' + encodeURIComponent(gid), function (ev) {
      events.insertBefore(el('li', null, el('span', {class: 'type', text: ev.type}),
                             el('span', {class: 'muted', text: ev.time})), events.firstChild);
      while (events.childNodes.length > 200) events.removeChild(events.lastChild);
      refresh();
    }, signal);
  }

  function renderReport(head, body, rep) {
    var g = rep.goal, p = rep.progress || {};
    append(head, [
      el('h1', {id: 'goal-title', text: g.title}),
      el('p', null, badge(g.status), ' ', el('code', {text: g.id}),
         g.branch ? [' branch ', el('code', {text: g.branch})] : null),
      progressBar(p.percent),
      el('p', {class: 'muted', id: 'goal-progress',
               text: (p.items_done || 0) + ' of ' + (p.items_total || 0) + ' items done · ' +
                     (p.done_points || 0) + ' of ' + (p.total_points || 0) + ' points · ' +
                     (p.percent || 0) + ' %'}),
      g.description ? el('p', {text: g.description}) : null,
      g.blocked_reason ? el('p', {class: 'error', text: 'blocked: ' + g.blocked_reason}) : null
    ]);
    append(body, [
      el('h2', {text: 'Work items'}), dag(g.id, rep.work_items || []), itemList(g.id, rep.work_items || []),
      el('h2', {text: 'Budget'}), budgetTable(rep.budget || {}),
      el('h2', {text: 'Artifacts'}), artifactList(rep.artifacts || []),
      (rep.escalations || []).length ? [el('h2', {text: 'Open escalations'}),
        el('ul', {class: 'list'}, rep.escalations.map(function (e) {
          return el('li', {class: 'card'}, badge(e.type), ' ',
                    el('p', {class: 'question', text: e.question || ''}),
                    el('a', {href: '#/escalations', text: 'answer it'}));
        }))] : null
    ]);
  }

  function itemList(gid, items) {
    return el('ul', {class: 'list', id: 'items'}, items.map(function (wi) {
      return el('li', {class: 'card'}, el('a', {href: itemHref(gid, wi.key), text: wi.key}), ' ',
                badge(wi.status), ' ', el('span', {text: wi.title}),
                el('span', {class: 'muted', text: ' · attempts ' + (wi.attempts || 0)}));
    }));
  }

  /* The plan as a layered graph: an item's column is the longest chain of
   * dependencies before it; edges from each dependency to the item. */
  function dag(gid, items) {
    var byKey = {}, depth = {};
    items.forEach(function (wi) { byKey[wi.key] = wi; });
    function level(key, seen) {
      if (depth[key] !== undefined) return depth[key];
      if (seen[key]) return 0; /* a cycle: the planner refuses them, draw anyway */
      seen[key] = true;
      var d = 0;
      ((byKey[key] || {}).depends_on || []).forEach(function (k) {
        if (byKey[k]) d = Math.max(d, level(k, seen) + 1);
      });
      seen[key] = false;
      return (depth[key] = d);
    }
    var cols = [];
    items.forEach(function (wi) {
      var d = level(wi.key, {});
      (cols[d] = cols[d] || []).push(wi);
    });
    var W = 150, H = 40, GX = 50, GY = 16, pos = {};
    var rows = 0;
    cols.forEach(function (col, c) {
      col.forEach(function (wi, r) { pos[wi.key] = {x: 10 + c * (W + GX), y: 10 + r * (H + GY)}; });
      rows = Math.max(rows, col.length);
    });
    var width = 20 + Math.max(1, cols.length) * (W + GX) - GX;
    var height = 20 + Math.max(1, rows) * (H + GY) - GY;
    var root = svg('svg', {width: width, height: height, viewBox: '0 0 ' + width + ' ' + height,
                           role: 'img', 'aria-label': 'work items and their dependencies', id: 'dag'});
    items.forEach(function (wi) {
      (wi.depends_on || []).forEach(function (k) {
        if (!pos[k]) return;
        var a = pos[k], b = pos[wi.key];
        var x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
        root.appendChild(svg('path', {class: 'dag-edge',
          d: 'M' + x1 + ' ' + y1 + ' C' + (x1 + GX / 2) + ' ' + y1 + ' ' + (x2 - GX / 2) + ' ' + y2 +
             ' ' + x2 + ' ' + y2}));
      });
    });
    items.forEach(function (wi) {
      var p = pos[wi.key];
      var label = wi.key + ' · ' + wi.status;
      var title = String(wi.title || '');
      var node = svg('a', {href: itemHref(gid, wi.key), class: 'dag-node ' + statusClass(wi.status),
                           'data-key': wi.key},
        svg('title', {text: wi.key + ': ' + title}),
        svg('rect', {x: p.x, y: p.y, width: W, height: H}),
        svg('text', {x: p.x + 8, y: p.y + 16, text: label.slice(0, 22)}),
        svg('text', {x: p.x + 8, y: p.y + 32, text: title.length > 22 ? title.slice(0, 21) + '…' : title}));
      root.appendChild(node);
    });
    return el('div', null, el('div', {class: 'dag-box'}, root),
              el('p', {class: 'dag-legend muted', text: 'Green done, blue running, yellow waiting, ' +
                                                       'red blocked or failed, grey skipped.'}));
  }

  function budgetTable(b) {
    function row(name, v, unit) {
      v = v || {};
      return el('tr', null, el('th', {text: name}), el('td', {text: String(v.spent === undefined ? '-' : v.spent) + unit}),
                el('td', {text: v.limit === null || v.limit === undefined ? 'no limit' : String(v.limit) + unit}));
    }
    return el('div', {class: 'table-wrap'}, el('table', {id: 'budget'},
      el('tr', null, el('th', {text: ''}), el('th', {text: 'spent'}), el('th', {text: 'limit'})),
      row('tokens', b.tokens, ''), row('cost', b.cost_usd, ' USD'), row('wall time', b.wall_seconds, ' s')));
  }

  function artifactList(arts) {
    if (!arts.length) return el('p', {class: 'muted', text: 'None yet.'});
    return el('ul', {class: 'list', id: 'artifacts'}, arts.map(function (a) {
      return el('li', {class: 'card'}, badge(a.type), ' ',
                a.url ? safeLink(a.url, a.ref || a.url) : el('code', {text: a.ref || a.path || ''}),
                a.hash ? [' ', el('code', {class: 'muted', text: String(a.hash).slice(0, 12)})] : null);
    }));
  }

  /* ---- an item ---- */

  function viewItem(gid, key, signal) {
    var box = el('div', {id: 'item'});
    main.appendChild(box);
    function load() {
      loadInto('/v1/goals/' + encodeURIComponent(gid) + '/items/' + encodeURIComponent(key),
        signal, [box], function (item) { renderItem(box, gid, item); });
    }
    load();
    var refresh = debounce(load, 400);
    streamEvents('?goal=' + encodeURIComponent(gid) + '&since=1s', refresh, signal);
  }

  function testList(tests) {
    if (!tests || !tests.length) return null;
    return el('div', null, el('strong', {text: 'failing tests: '}),
              el('ul', {class: 'failing'}, tests.map(function (t) { return el('li', null, el('code', {text: t})); })));
  }

  function renderItem(box, gid, it) {
    append(box, [
      el('p', null, el('a', {href: goalHref(gid), text: '← goal ' + short(gid)})),
      el('h1', {id: 'item-title', text: it.key + ': ' + it.title}),
      el('p', null, badge(it.status)),
      el('h2', {text: 'Attempts'}),
      (it.attempts || []).length ? el('ul', {class: 'list', id: 'attempts'}, it.attempts.map(function (a) {
        return el('li', {class: 'card attempt'},
          el('p', null, el('strong', {text: 'attempt ' + a.attempt}), ' ', badge(a.status),
             el('span', {class: 'muted', text: ' ' + a.kind + ' · tier ' + a.tier + ' · ' + (a.turns || 0) +
                                               ' turns' + (a.model ? ' · ' + a.model : '') +
                                               (a.error_class ? ' · ' + a.error_class : '')})),
          testList(a.failing_tests),
          a.summary ? el('p', {text: a.summary}) : null,
          a.failure_reason ? el('pre', {text: a.failure_reason}) : null);
      })) : el('p', {class: 'muted', text: 'No attempt yet.'}),
      el('h2', {text: 'Gates (latest verification)'}),
      (it.gates || []).length ? el('ul', {class: 'list', id: 'gates'}, it.gates.map(function (g) {
        return el('li', {class: 'card'},
          el('p', null, el('strong', {text: g.gate}), ' ', badge(g.passed ? 'pass' : 'fail'),
             el('span', {class: 'muted', text: ' exit ' + g.exit_code +
                         (g.classification ? ' · ' + g.classification : '') +
                         (g.restored_inputs ? ' · gate inputs restored' : '') +
                         (g.tests_passed !== undefined ? ' · ' + g.tests_passed + ' passed, ' +
                          g.tests_failed + ' failed' : '')})),
          testList(g.failing_tests),
          g.output_tail ? el('details', null, el('summary', {text: 'output (tail)'}),
                             el('pre', {text: g.output_tail})) : null);
      })) : el('p', {class: 'muted', text: 'Not verified yet.'})
    ]);
  }

  /* ---- escalations ---- */

  var ACTIONS = ['retry', 'skip', 'alternative', 'increase_budget', 'complete_partial', 'pause',
                 'accept_test_changes'];

  function viewEscalations(signal) {
    var list = el('ul', {class: 'list', id: 'escalations'});
    var status = el('p', {class: 'error'});
    append(main, [el('h1', {text: 'Open escalations'}), status, list]);
    var shown = null; /* the ids listed: a card being answered is not redrawn */
    function load() {
      api('GET', '/v1/escalations').then(function (r) {
        if (signal.aborted) return;
        if (r.status !== 200) { status.textContent = errorText(r.body, r.status); return; }
        status.textContent = '';
        var ids = r.body.map(function (e) { return e.id; }).join(' ');
        if (ids === shown) return;
        shown = ids;
        clear(list);
        if (!r.body.length) list.appendChild(el('li', {class: 'muted', id: 'no-escalations',
                                                        text: 'No open escalations.'}));
        r.body.forEach(function (e) { list.appendChild(escalationCard(e, load)); });
      });
    }
    load();
    streamEvents('?since=5s', debounce(load, 400), signal);
  }

  function escalationCard(e, reload) {
    var pk = e.packet || {};
    var question = pk.minimal_question || pk.question || pk.summary || '';
    var action = el('select', {name: 'action'}, ACTIONS.map(function (a) { return el('option', {value: a, text: a}); }));
    var input = el('textarea', {name: 'input', rows: 2, placeholder: 'your answer (for retry, alternative, ...)'});
    var err = el('p', {class: 'error'});
    var button = el('button', {type: 'submit', class: 'primary', text: 'Resolve'});
    var form = el('form', {class: 'stack resolve'}, el('label', null, 'Action', action),
                  el('label', null, 'Input', input), err, button);
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      button.disabled = true;
      var body = {action: action.value};
      if (input.value.trim()) body.input = input.value;
      api('POST', '/v1/escalations/' + encodeURIComponent(e.id) + '/resolve', body).then(function (r) {
        button.disabled = false;
        if (r.status === 200) { reload(); return; }
        err.textContent = errorText(r.body, r.status);
      });
    });
    return el('li', {class: 'card escalation', 'data-escalation-id': e.id},
      el('p', null, badge(e.type), ' ', badge(e.severity), ' ',
         el('a', {href: goalHref(e.goal_id), text: 'goal ' + short(e.goal_id)}),
         el('span', {class: 'muted', text: ' · ' + e.created_at})),
      el('p', {class: 'question', text: question}), form);
  }

  /* ---- the router ---- */

  function route(why) {
    if (viewAbort) viewAbort.abort();
    viewAbort = new AbortController();
    var signal = viewAbort.signal;
    clear(main);
    setLive(false);
    var nav = document.getElementById('nav');
    if (!token()) {
      nav.className = 'hidden';
      viewLogin(typeof why === 'string' ? why : '');
      return;
    }
    nav.className = '';
    var h = location.hash.replace(/^#/, '') || '/';
    var m;
    if ((m = h.match(/^\/goals\/([^/]+)\/items\/([^/]+)$/)))
      viewItem(decodeURIComponent(m[1]), decodeURIComponent(m[2]), signal);
    else if ((m = h.match(/^\/goals\/([^/]+)$/)))
      viewGoal(decodeURIComponent(m[1]), signal);
    else if (h === '/escalations')
      viewEscalations(signal);
    else
      viewGoals(signal);
  }

  document.getElementById('signout').addEventListener('click', function () { signOut(''); });
  window.addEventListener('hashchange', function () { route(); });
  route();
})();
