/*
 * pages.js - the dashboard's pages about one goal: the goal (why it waits,
 * what runs now, its plan, its events), an item (per-test results, each
 * gate's output tail, the attempts), and the open escalations with the
 * actions each allows.  Built with lib.js (window.goald); app.js routes
 * to them.  Every text from the API is text: textContent only.
 */
(function () {
  'use strict';

  var G = window.goald;
  var el = G.el, svg = G.svg, append = G.append, clear = G.clear, badge = G.badge;
  var api = G.api, errorText = G.errorText, short = G.short;
  var goalHref = G.goalHref, itemHref = G.itemHref;
  var views = G.views = G.views || {};
  var EVENTS_KEPT = 500;

  /* ---- what runs now ---- */

  /* one running job: its kind, item, turn and last tool call */
  function jobLine(j) {
    return el('li', {class: 'job', 'data-run-id': j.run_id},
      badge(j.kind), ' ',
      j.item_key ? el('a', {href: itemHref(j.goal_id, j.item_key), text: j.item_key}) : 'the goal',
      el('span', {class: 'muted', text: ' · turn ' + (j.turn || 0) + ' · ' + G.ago((j.age_s || 0) * 1000) +
                  (j.node_id ? ' · node ' + j.node_id : '')}),
      j.last_tool ? el('div', {class: 'tool'}, el('span', {class: 'muted', text: 'last tool call: '}),
                       el('code', {text: j.last_tool + (j.last_tool_arg ? ': ' + j.last_tool_arg : '')}))
                  : el('div', {class: 'tool muted', text: 'no tool call yet'}));
  }
  G.jobLine = jobLine;

  /* the jobs of goal gid (of its item key only, when given) into box */
  function showRunning(box, gid, key, signal) {
    api('GET', '/v1/status').then(function (r) {
      if (signal.aborted || r.status !== 200) return;
      var jobs = (r.body.running || []).filter(function (j) {
        return j.goal_id === gid && (!key || j.item_key === key);
      });
      clear(box);
      if (!jobs.length) return;
      append(box, [el('h2', {text: 'Running now'}), el('ul', {class: 'list card'}, jobs.map(jobLine))]);
    });
  }

  /* ---- a goal ---- */

  views.goal = function (main, gid, signal) {
    var why = el('div', {id: 'goal-why'});
    var head = el('div', {id: 'goal-head'});
    var running = el('div', {id: 'goal-running'});
    var escs = el('div', {id: 'goal-escalations'});
    var body = el('div', {id: 'goal-body'});
    var evBox = el('div', {id: 'events-box'});
    append(main, [why, head, running, escs, body, evBox]);
    var items = {}; /* item id -> key */
    var evs = eventList(evBox, items);

    function load() {
      if (signal.aborted) return;
      G.loadInto('/v1/goals/' + encodeURIComponent(gid), signal, [head, why, body], function (rep) {
        (rep.work_items || []).forEach(function (wi) { items[wi.id] = wi.key; });
        evs.items(rep.work_items || []);
        renderWhy(why, rep);
        renderReport(head, body, rep);
      });
      showRunning(running, gid, null, signal);
    }
    var escShown = escalationBox(escs, signal, function (e) { return e.goal_id === gid; }, load);
    load();
    var refresh = G.debounce(function () { load(); escShown(); }, 250);
    G.streamEvents('?goal=' + encodeURIComponent(gid), function (ev) {
      evs.add(ev);
      refresh();
    }, signal);
  };

  /* At the top: why the goal waits (blocked, escalated) or how it ended
   * short (partial, cancelled). */
  function renderWhy(box, rep) {
    var g = rep.goal, lines = [];
    var keyOf = {};
    (rep.work_items || []).forEach(function (wi) { keyOf[wi.id] = wi; });
    if (g.status === 'blocked')
      lines.push(el('p', null, el('strong', {text: 'Blocked: '}), g.blocked_reason || 'waiting for a human'));
    (rep.escalations || []).forEach(function (e) {
      var wi = keyOf[e.item_id];
      lines.push(el('p', {class: 'why-esc'}, el('strong', {text: 'Escalated (' + e.type + ')'}),
        wi ? [' on ', el('a', {href: itemHref(g.id, wi.key), text: wi.key}), ' ', el('span', {text: wi.title})] : null,
        ': ', el('span', {class: 'question', text: e.question || ''})));
    });
    (rep.work_items || []).forEach(function (wi) {
      if ((wi.status === 'blocked' || wi.status === 'escalated') && wi.question &&
          !(rep.escalations || []).some(function (e) { return e.item_id === wi.id; }))
        lines.push(el('p', null, el('strong', {text: wi.key + ' asks: '}), el('span', {class: 'question', text: wi.question})));
    });
    if (g.status === 'cancelled' && g.outcome_reason)
      lines.push(el('p', null, el('strong', {text: 'Cancelled: '}), g.outcome_reason));
    if (!lines.length) { box.className = ''; return; }
    box.className = 'why card' + (g.status === 'blocked' || (rep.escalations || []).length ? ' why-stop' : '');
    append(box, lines);
  }

  function progressText(p) {
    return (p.items_done || 0) + ' of ' + (p.items_total || 0) + ' items done' +
      (p.items_skipped ? ' · ' + p.items_skipped + ' skipped' : '') +
      (p.items_cancelled ? ' · ' + p.items_cancelled + ' cancelled' : '') + ' · ' +
      (p.done_points || 0) + ' of ' + (p.total_points || 0) + ' points · ' + (p.percent || 0) + ' %';
  }
  G.progressText = progressText;

  function renderReport(head, body, rep) {
    var g = rep.goal, p = rep.progress || {};
    append(head, [
      el('h1', {id: 'goal-title', text: g.title}),
      el('p', null, badge(g.status), g.partial ? [' ', G.partialBadge()] : null, ' ', el('code', {text: g.id}),
         g.branch ? [' branch ', el('code', {text: g.branch})] : null),
      G.progressBar(p.percent, g.partial),
      el('p', {class: 'muted', id: 'goal-progress', text: progressText(p)}),
      g.description ? el('p', {text: g.description}) : null
    ]);
    append(body, [
      g.partial ? partialBox(rep) : null,
      el('h2', {text: 'Work items'}), dag(g.id, rep.work_items || []), itemList(g.id, rep.work_items || []),
      el('h2', {text: 'Budget'}), budgetTable(rep.budget || {}),
      el('h2', {text: 'Artifacts'}), artifactList(rep.artifacts || [])
    ]);
  }

  /* what a partial goal left: the items skipped, the gates still failing */
  function partialBox(rep) {
    var p = rep.progress || {};
    var skipped = (rep.work_items || []).filter(function (wi) {
      return wi.status === 'skipped' || wi.status === 'cancelled';
    });
    return el('div', {class: 'card partial-box', id: 'goal-partial'},
      el('p', null, G.partialBadge(), ' ', el('strong', {text: 'Completed with what was done.'}), ' ',
         el('span', {id: 'skipped-count', text: (p.items_skipped || 0) + ' skipped, ' +
                                                (p.items_cancelled || 0) + ' cancelled, not counted as done'})),
      skipped.length ? el('ul', null, skipped.map(function (wi) {
        return el('li', null, el('a', {href: itemHref(rep.goal.id, wi.key), text: wi.key}), ' ', badge(wi.status), ' ',
                  el('span', {text: wi.title}));
      })) : null,
      (rep.partial_failures || []).map(function (f) {
        return el('p', null, 'still failing in ', el('code', {text: f.gate}), ': ',
                  (f.tests || []).map(function (t) { return el('code', {class: 'test', text: t + ' '}); }));
      }));
  }

  function itemList(gid, items) {
    return el('ul', {class: 'list', id: 'items'}, items.map(function (wi) {
      return el('li', {class: 'card'}, el('a', {href: itemHref(gid, wi.key), text: wi.key}), ' ',
                badge(wi.status), ' ', el('span', {text: wi.title}),
                el('span', {class: 'muted', text: ' · attempts ' + (wi.attempts || 0)}));
    }));
  }

  /* ---- the events: each opens to its (redacted) payload; filters by
   * type and item ---- */

  function eventList(box, items) {
    var all = [];
    var typeSel = el('select', {id: 'ev-type', 'aria-label': 'event type'}, el('option', {value: '', text: 'every type'}));
    var itemSel = el('select', {id: 'ev-item', 'aria-label': 'work item'}, el('option', {value: '', text: 'every item'}));
    var list = el('ul', {class: 'events', id: 'events'});
    var types = {};
    append(box, [el('h2', {text: 'Events'}),
                 el('div', {class: 'filters'}, el('label', null, 'Type', typeSel), el('label', null, 'Item', itemSel)),
                 list]);

    function matches(ev) {
      return (!typeSel.value || ev.type === typeSel.value) && (!itemSel.value || ev.item_id === itemSel.value);
    }
    function row(ev) {
      var key = ev.item_id ? items[ev.item_id] || short(ev.item_id) : '';
      return el('li', {'data-type': ev.type},
        el('details', null,
          el('summary', null, el('span', {class: 'type', text: ev.type}),
             key ? el('span', {class: 'badge', text: key}) : null, ' ',
             el('span', {class: 'muted', text: ev.time})),
          el('pre', {class: 'payload', text: JSON.stringify(ev.payload || {}, null, 2)})));
    }
    function redraw() {
      clear(list);
      all.filter(matches).slice(-200).reverse().forEach(function (ev) { list.appendChild(row(ev)); });
    }
    typeSel.addEventListener('change', redraw);
    itemSel.addEventListener('change', redraw);
    return {
      add: function (ev) {
        all.push(ev);
        if (all.length > EVENTS_KEPT) all.shift();
        if (!types[ev.type]) {
          types[ev.type] = true;
          typeSel.appendChild(el('option', {value: ev.type, text: ev.type}));
        }
        if (!matches(ev)) return;
        list.insertBefore(row(ev), list.firstChild);
        while (list.childNodes.length > 200) list.removeChild(list.lastChild);
      },
      items: function (wis) {
        var have = {};
        Array.prototype.forEach.call(itemSel.options, function (o) { have[o.value] = true; });
        var added = false;
        wis.forEach(function (wi) {
          if (have[wi.id]) return;
          itemSel.appendChild(el('option', {value: wi.id, text: wi.key + ': ' + wi.title}));
          added = true;
        });
        if (added) redraw(); /* the events listed before name their items now */
      }
    };
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
      var node = svg('a', {href: itemHref(gid, wi.key), class: 'dag-node ' + G.statusClass(wi.status),
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
                a.url ? G.safeLink(a.url, a.ref || a.url) : el('code', {text: a.ref || a.path || ''}),
                a.hash ? [' ', el('code', {class: 'muted', text: String(a.hash).slice(0, 12)})] : null);
    }));
  }

  /* ---- an item ---- */

  views.item = function (main, gid, key, signal) {
    var box = el('div', {id: 'item'});
    var running = el('div', {id: 'item-running'});
    append(main, [box, running]);
    function load() {
      if (signal.aborted) return;
      G.loadInto('/v1/goals/' + encodeURIComponent(gid) + '/items/' + encodeURIComponent(key),
        signal, [box], function (item) { renderItem(box, gid, item); });
      showRunning(running, gid, key, signal);
    }
    load();
    G.streamEvents('?goal=' + encodeURIComponent(gid) + '&since=1s', G.debounce(load, 400), signal);
  };

  function testList(tests) {
    if (!tests || !tests.length) return null;
    return el('div', null, el('strong', {text: 'failing tests: '}),
              el('ul', {class: 'failing'}, tests.map(function (t) { return el('li', null, el('code', {text: t})); })));
  }

  /* the per-test results of the item's latest verification */
  var TEST_KINDS = [
    ['introduced', 'introduced', 'failing now, passing at the baseline (or new and failing)'],
    ['fixed', 'fixed', 'failing at the baseline, passing now'],
    ['pre_existing', 'pre-existing', 'failing at the baseline and now'],
    ['fail_to_pass', 'new tests', 'the item\'s new tests: fail with the baseline\'s product, pass with its own'],
    ['not_exercising', 'new, not exercising', 'new tests that pass with the baseline\'s product too'],
    ['accepted_test_changes', 'accepted test changes', 'changed tests pinning the new behaviour']
  ];

  function testResults(it) {
    if (!it.granularity)
      return el('p', {class: 'muted', id: 'tests', text: 'Not verified yet.'});
    return el('div', {class: 'table-wrap'}, el('table', {id: 'tests', class: 'tests'},
      el('tr', null, el('th', {text: 'result'}), el('th', {text: 'count'}), el('th', {text: 'test cases'})),
      TEST_KINDS.map(function (k) {
        var list = it[k[0]] || [];
        return el('tr', {'data-kind': k[0], class: list.length ? 'k-' + k[0] : 'empty'},
          el('th', {title: k[2]}, badge(k[1])), el('td', {class: 'count', text: String(list.length)}),
          el('td', null, list.length ? el('ul', {class: 'cases'}, list.map(function (t) {
            return el('li', null, el('code', {text: t}));
          })) : el('span', {class: 'muted', text: '-'})));
      })),
      el('p', {class: 'muted', text: 'Compared per ' + it.granularity +
        (it.baseline ? ' against ' + String(it.baseline).slice(0, 12) : '') +
        (it.tests_weakened ? ' · tests weakened or removed' : '')}));
  }

  function renderItem(box, gid, it) {
    append(box, [
      el('p', null, el('a', {href: goalHref(gid), text: '← goal ' + short(gid)})),
      el('h1', {id: 'item-title', text: it.key + ': ' + it.title}),
      el('p', null, badge(it.status)),
      el('h2', {text: 'Tests'}), testResults(it),
      el('h2', {text: 'Gates (latest verification)'}),
      (it.gates || []).length ? el('ul', {class: 'list', id: 'gates'}, it.gates.map(function (g) {
        return el('li', {class: 'card gate', 'data-gate': g.gate},
          el('p', null, el('strong', {text: g.gate}), ' ', badge(g.passed ? 'pass' : 'fail'),
             el('span', {class: 'muted', text: ' exit ' + g.exit_code +
                         (g.classification ? ' · ' + g.classification : '') +
                         (g.restored_inputs ? ' · gate inputs restored' : '') +
                         (g.tests_passed !== undefined ? ' · ' + g.tests_passed + ' passed, ' +
                          g.tests_failed + ' failed' : '')})),
          testList(g.failing_tests),
          g.output_tail ? [el('p', {class: 'muted', text: 'output (its tail):'}),
                           el('pre', {class: 'tail', text: g.output_tail})] : null);
      })) : el('p', {class: 'muted', text: 'Not verified yet.'}),
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
      })) : el('p', {class: 'muted', text: 'No attempt yet.'})
    ]);
  }

  /* ---- escalations ---- */

  views.escalations = function (main, signal) {
    var box = el('div');
    append(main, [el('h1', {text: 'Open escalations'}), box]);
    var reload = escalationBox(box, signal, null, null);
    G.streamEvents('?since=5s', G.debounce(reload, 400), signal);
  };

  /* The open escalations (those keep() keeps) as cards in box; a card
   * being answered is not redrawn while the list stays the same.  Returns
   * the reload function; after a resolve, also after() is called. */
  function escalationBox(box, signal, keep, after) {
    var list = el('ul', {class: 'list', id: 'escalations'});
    var status = el('p', {class: 'error'});
    append(box, [status, list]);
    var shown = null;
    function load() {
      if (signal.aborted) return;
      Promise.all([api('GET', '/v1/escalations'), G.scopes()]).then(function (res) {
        var r = res[0], scopes = res[1];
        if (signal.aborted) return;
        if (r.status !== 200) { status.textContent = errorText(r.body, r.status); return; }
        status.textContent = '';
        var open = r.body.filter(function (e) { return !keep || keep(e); });
        var ids = open.map(function (e) { return e.id; }).join(' ');
        if (ids === shown) return;
        shown = ids;
        clear(list);
        if (keep && !open.length) return;
        if (keep) list.appendChild(el('li', null, el('h2', {text: 'Open escalations'})));
        if (!open.length) list.appendChild(el('li', {class: 'muted', id: 'no-escalations',
                                                      text: 'No open escalations.'}));
        var canResolve = scopes.indexOf('resolve') >= 0;
        open.forEach(function (e) {
          list.appendChild(escalationCard(e, canResolve, function () { load(); if (after) after(); }));
        });
      });
    }
    load();
    return load;
  }

  var ACTIONS = ['retry', 'skip', 'alternative', 'increase_budget', 'complete_partial', 'pause',
                 'accept_test_changes'];

  /* the last failure the packet's attempts recorded */
  function lastError(pk) {
    var at = (pk.attempts || []).filter(function (a) { return a && a.why_failed; });
    return at.length ? at[at.length - 1] : null;
  }

  function escalationCard(e, canResolve, reload) {
    var pk = e.packet || {}, an = pk.analysis || {}, wi = pk.work_item || null;
    var question = pk.minimal_question || pk.question || an.minimal_question || '';
    var cause = pk.cause || (e.type === 'ask_human' ? 'the agent asks a human' : an.root_cause) || '';
    var last = lastError(pk);
    return el('li', {class: 'card escalation', 'data-escalation-id': e.id},
      el('p', null, badge(e.type), ' ', badge(e.severity), ' ',
         el('a', {href: goalHref(e.goal_id), text: 'goal ' + short(e.goal_id)}),
         el('span', {class: 'muted', text: ' · ' + e.created_at})),
      wi ? el('p', {class: 'esc-item'}, 'Item ', el('a', {href: itemHref(e.goal_id, wi.key), text: wi.key}), ': ',
              el('strong', {class: 'esc-item-title', text: wi.title || ''})) : null,
      cause ? el('div', {class: 'esc-cause'}, el('strong', {text: 'Cause: '}), el('span', {class: 'question', text: cause})) : null,
      last ? el('div', {class: 'esc-last-error'}, el('strong', {text: 'Last error (attempt ' + last.attempt + '): '}),
                el('pre', {text: last.why_failed})) : null,
      el('p', {class: 'question', text: question}),
      (an.options || []).length ? el('details', {class: 'options'}, el('summary', {text: 'Options'}),
        el('ul', null, an.options.map(function (o) {
          return el('li', null, el('strong', {text: String(o.option || '')}), ': ', String(o.description || ''),
                    o.pros ? el('div', {class: 'ok', text: '+ ' + o.pros}) : null,
                    o.cons ? el('div', {class: 'error', text: '- ' + o.cons}) : null);
        }))) : null,
      canResolve ? resolveForm(e, reload)
                 : el('p', {class: 'muted no-resolve', text: 'This token cannot answer it: the scope resolve is needed.'}));
  }

  function resolveForm(e, reload) {
    var pk = e.packet || {};
    var allowed = Array.isArray(pk.actions) && pk.actions.length ? pk.actions : ACTIONS;
    var action = el('select', {name: 'action'}, allowed.map(function (a) {
      return el('option', {value: String(a), text: String(a)});
    }));
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
    return form;
  }
})();
