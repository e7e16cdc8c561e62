/*
 * lib.js - what every page of the goald dashboard shares: building the
 * DOM, the /v1 API, the event stream.  Plain JavaScript, no framework, no
 * build; pages.js and app.js use it through window.goald.
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
  var live = document.getElementById('live');
  var G = window.goald = {};
  /* set by app.js: what a refused token does (sign out, saying why) */
  G.onRefused = function () {};

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

  /* partial: the goal completed with what was done (amber) */
  function progressBar(percent, partial) {
    var p = Math.max(0, Math.min(100, Number(percent) || 0));
    var fill = el('div', {class: 'fill'});
    var bar = el('div', {class: 'bar' + (partial ? ' partial' : p >= 100 ? ' full' : ''), role: 'progressbar',
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

  /* {status, body, link} for METHOD path (body: a JSON value or
   * undefined; link: the Link header).  A 401 signs out: the token is
   * wrong or revoked. */
  function api(method, path, body) {
    var tok = token();
    /* signed out: a late timer of a page left asks nothing */
    if (!tok) return Promise.resolve({status: 401, body: null, link: ''});
    var opts = {method: method, headers: headers(body === undefined ? {} : {'Content-Type': 'application/json'}),
                credentials: 'omit', cache: 'no-store'};
    if (body !== undefined) opts.body = JSON.stringify(body);
    return fetch(path, opts).then(function (r) {
      return r.text().then(function (t) {
        var v = null;
        try { v = t ? JSON.parse(t) : null; } catch (e) { v = null; }
        /* only the token still signed in is signed out */
        if (r.status === 401 && tok === token()) G.onRefused('the token was refused: ' + errorText(v, r.status));
        return {status: r.status, body: v, link: r.headers.get('Link') || ''};
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
          if (r.status === 401) { G.onRefused('the token was refused'); return; }
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

  /* a status as a badge in amber: "partial" */
  function partialBadge() {
    return el('span', {class: 'badge st-partial', text: 'partial', title: 'completed with what was done'});
  }

  /* a number for people: 12,345 (or "?" when unread: -1) */
  function num(n) {
    if (n === null || n === undefined || Number(n) < 0) return '?';
    return Number(n).toLocaleString('en-US');
  }

  function usd(n) {
    if (n === null || n === undefined || Number(n) < 0) return '?';
    return Number(n).toFixed(Number(n) < 1 ? 4 : 2) + ' USD';
  }

  /* "3 s", "5 min", "2 h" from ms */
  function ago(ms) {
    var s = Math.max(0, Math.round(Number(ms || 0) / 1000));
    if (s < 120) return s + ' s';
    if (s < 7200) return Math.round(s / 60) + ' min';
    return Math.round(s / 3600) + ' h';
  }

  /* the scopes the signed-in token has (from /v1/overview), cached for
   * the tab; then(cb(list)) */
  var scopesP = null;
  function scopes() {
    if (!scopesP) {
      scopesP = api('GET', '/v1/overview').then(function (r) {
        if (r.status !== 200 || !r.body || !r.body.token) { scopesP = null; return []; }
        return r.body.token.scopes || [];
      });
    }
    return scopesP;
  }
  function forgetScopes() { scopesP = null; }

  G.el = el; G.svg = svg; G.append = append; G.clear = clear; G.badge = badge;
  G.statusClass = statusClass; G.progressBar = progressBar; G.partialBadge = partialBadge;
  G.goalHref = goalHref; G.itemHref = itemHref; G.safeLink = safeLink; G.short = short;
  G.token = token; G.TOKEN_KEY = TOKEN_KEY; G.api = api; G.errorText = errorText;
  G.loadInto = loadInto; G.streamEvents = streamEvents; G.setLive = setLive;
  G.debounce = debounce; G.num = num; G.usd = usd; G.ago = ago;
  G.scopes = scopes; G.forgetScopes = forgetScopes;
})();
