// The dashboard in headless chromium (run by dashboard.sh, which starts the
// daemon and the server).  Every step waits on the DOM with a deadline and
// never reloads; any request off the goald origin, console error, page
// error or CSP violation fails the test.
'use strict';
const puppeteer = require('puppeteer-core');
const assert = require('assert');
const path = require('path');

const URL0 = process.env.GOALD_URL;
const ORIGIN = new URL(URL0).origin;
const TOKEN = process.env.GOALD_TOKEN;
const SHOTS = process.env.SHOTS;
const HOSTILE_TITLE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">';
const HOSTILE_Q = process.env.HOSTILE_Q;
const READ_TOKEN = process.env.GOALD_READ_TOKEN;

// A click on what sel names once it is there: the page re-renders live
// (events, a 5 s refresh), so an element found a moment ago may be gone;
// the click is tried again on the new one (a lost element throws before
// any click is dispatched).
async function click(page, sel) {
  for (let i = 0; ; i++) {
    try {
      await page.waitForSelector(sel);
      await page.click(sel);
      return;
    } catch (e) {
      if (i >= 5 || !/detached|not clickable|No node found|has no bounding box/i.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
const SECRET = process.env.SECRET;
const problems = [];
const DOC_SHOTS = ['overview', 'goal-running', 'goal-escalated', 'escalations', 'item', 'goal-partial', 'goals'];
let allow4xx = null; // a status the current step provokes on purpose

// A step that provokes status on purpose: act(), then wait until shown (a
// function run in the page) holds; the console's error for that status is
// no problem meanwhile.
async function provoked(page, status, act, shown) {
  allow4xx = status;
  await act();
  await page.waitForFunction(shown);
  allow4xx = null;
}

function step(what) { console.log('- ' + what); }

async function signIn(page, token) {
  await page.waitForSelector('#login #token');
  await page.$eval('#token', (e) => { e.value = ''; });
  await page.type('#token', token);
  await click(page, '#login button[type=submit]');
  await page.waitForSelector('#overview');
}

async function shots(page, name) {
  for (const width of [1280, 360]) {
    await page.setViewport({width, height: 900});
    await new Promise((r) => setTimeout(r, 150));
    if (width === 360) {
      const sw = await page.evaluate(() => document.documentElement.scrollWidth);
      assert(sw <= 364, `${name} at 360 px: scrollWidth ${sw}`);
    }
    await page.screenshot({path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true});
  }
  // the copies docs/http.md shows (docs/img): the first screen, smaller
  if (DOC_SHOTS.includes(name)) {
    await page.setViewport({width: 1024, height: 760});
    await new Promise((r) => setTimeout(r, 150));
    await page.screenshot({path: path.join(SHOTS, `dashboard-${name}.png`)});
  }
  await page.setViewport({width: 1280, height: 900});
}

/* hostile text is on the page as text, and nothing ran or was made of it */
async function noInjection(page, where, texts) {
  const r = await page.evaluate((texts) => ({
    pwned: window.__pwned,
    scripts: Array.from(document.scripts).map((s) => s.src),
    imgs: document.querySelectorAll('img').length,
    found: texts.map((t) => document.body.textContent.includes(t)),
  }), texts);
  assert.strictEqual(r.pwned, undefined, `${where}: window.__pwned was set`);
  assert.deepStrictEqual(r.scripts, ['lib.js', 'pages.js', 'app.js'].map((f) => ORIGIN + '/static/' + f),
    `${where}: scripts ${r.scripts}`);
  assert.strictEqual(r.imgs, 0, `${where}: an <img> element was created`);
  texts.forEach((t, i) => assert(r.found[i], `${where}: the text ${JSON.stringify(t)} is not on the page`));
}

(async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--no-first-run', '--disable-gpu'],
  });
  let failed = false;
  try {
    const page = await browser.newPage();
    page.setDefaultTimeout(60000);
    await page.setViewport({width: 1280, height: 900});
    page.on('request', (req) => {
      const u = req.url();
      if (!u.startsWith(ORIGIN + '/')) problems.push('a request off the goald origin: ' + u);
    });
    page.on('console', (m) => {
      if (allow4xx && m.text().includes('status of ' + allow4xx)) return;
      if (m.type() === 'error' || /Content.Security.Policy|Trusted Type/i.test(m.text()))
        problems.push('console ' + m.type() + ': ' + m.text());
    });
    page.on('pageerror', (e) => problems.push('page error: ' + e.message));
    page.on('requestfailed', (req) => {
      // a stream aborted by leaving its view is no failure
      if (!/\/v1\/events/.test(req.url())) problems.push('request failed: ' + req.url() + ' ' + req.failure().errorText);
    });

    step('the token form');
    await page.goto(URL0 + '/', {waitUntil: 'domcontentloaded'});
    await page.waitForSelector('#login #token');
    await shots(page, 'login');
    await provoked(page, 401, async () => {
      await page.type('#token', 'gld_wrong');
      await click(page, '#login button[type=submit]');
    }, () => /refused/.test(document.querySelector('#login-error')?.textContent || ''));
    await signIn(page, READ_TOKEN);
    assert.strictEqual(await page.evaluate(() => document.cookie), '', 'no cookie');

    step('the overview is the first page: daemon, nodes, queues, goals by status, escalations, 24 h');
    await page.waitForSelector('#overview #daemon');
    await page.waitForFunction(() => document.querySelector('#daemon [data-health]')?.textContent === 'alive');
    const ov = await page.evaluate(() => ({
      node: document.querySelector('#nodes tr[data-node] [data-health]')?.textContent,
      lanes: document.querySelector('#nodes tr[data-node]')?.textContent || '',
      active: document.querySelector('#goal-counts [data-status="active"] .tile-value')?.textContent,
      esc: document.querySelector('#open-escalations .tile-value')?.textContent,
      queues: ['#q-plan', '#q-work', '#q-wait'].map((q) => document.querySelector(q + ' .tile-value')?.textContent),
      day: ['#day-failed', '#day-tokens', '#day-cost'].map((q) => document.querySelector(q + ' .tile-value')?.textContent),
      version: document.querySelector('#daemon')?.textContent || '',
    }));
    assert.strictEqual(ov.node, 'alive', 'the node is alive: ' + JSON.stringify(ov));
    assert.match(ov.lanes, /plan \d+\/\d+ · work \d+\/\d+/, 'lanes busy/cap');
    assert.strictEqual(ov.active, '1', 'one active goal');
    assert.strictEqual(ov.esc, '1', 'one open escalation');
    assert(ov.queues.every((v) => /^\d+$/.test(v || '')), 'queue depths: ' + ov.queues);
    assert(/^\d+$/.test(ov.day[0]) && /^[\d,]+$/.test(ov.day[1]) && /USD$/.test(ov.day[2]), 'the last 24 h: ' + ov.day);
    assert.match(ov.version, /goald \d+\.\d+/, 'the version');
    await shots(page, 'overview');

    step('an escalated goal says why at the top of its page');
    await click(page, '#goal-counts [data-status="active"]');
    await page.waitForSelector('#goals li[data-goal-id]');
    const g1 = await page.$eval('#goals li[data-goal-id]', (li) => li.getAttribute('data-goal-id'));
    await click(page, `#goals li[data-goal-id="${g1}"] a.title`);
    await page.waitForFunction((q) => (document.querySelector('#goal-why')?.textContent || '').includes(q), {}, HOSTILE_Q);
    const why = await page.$eval('#goal-why', (e) => e.textContent);
    assert.match(why, /Escalated \(ask_human\) on wi-1 decide the sign/, 'the reason at the top: ' + why);
    assert(await page.$eval('main', (m) => m.firstElementChild.id === 'goal-why'), 'the reason comes first');
    await noInjection(page, 'escalated goal', [HOSTILE_Q]);
    await shots(page, 'goal-escalated');

    step('a read token sees the escalation card but no resolve form');
    await click(page, 'nav a[href="#/escalations"]');
    await page.waitForSelector('#escalations li.escalation');
    assert.strictEqual(await page.$eval('#escalations li.escalation .esc-item-title', (e) => e.textContent), 'decide the sign');
    assert.strictEqual(await page.$$eval('#escalations li.escalation form', (f) => f.length), 0, 'no form without resolve');
    await page.waitForSelector('#escalations li.escalation .no-resolve');

    step('sign in again with an admin token');
    await click(page, '#signout');
    await signIn(page, TOKEN);
    await page.waitForSelector('#overview #daemon');

    step('goals: the submit form has its own page');
    await click(page, 'nav a[href="#/goals"]');
    await page.waitForSelector('#goals');
    assert.strictEqual(await page.$$eval('#submit', (f) => f.length), 0, 'no form above the list');
    await click(page, 'nav a[href="#/submit"]');
    await page.waitForSelector('#submit');

    step('submit: a 422 shown next to its field');
    await provoked(page, 422, async () => {
      await page.type('#f-title', 'x');
      await page.type('#f-budget-max_tokens', '-5');
      await click(page, '#submit button[type=submit]');
    }, () => (document.querySelector('[data-error-for="budget.max_tokens"]')?.textContent || '').includes('max_tokens'));
    await page.$eval('#f-title', (e) => { e.value = ''; });
    await page.$eval('#f-budget-max_tokens', (e) => { e.value = ''; });

    step('the form says which repositories this server accepts');
    await page.waitForFunction((r) => (document.querySelector('#submit-roots')?.textContent || '').includes(r),
      {}, process.env.GOALD_REPO);

    step('submit a goal through the form');
    await page.type('#f-title', HOSTILE_TITLE);
    await page.type('#f-description', 'multiply two numbers');
    await page.type('#f-repo', process.env.GOALD_REPO);
    await page.type('#f-base_branch', 'main');
    await page.type('#f-success_criteria', 'sh test.sh exits 0');
    await page.type('#f-budget-max_tokens', '1000000');
    await click(page, '#submit button[type=submit]');
    await page.waitForSelector('#submitted-link');
    await page.evaluate(() => { window.__noReload = 1; });
    await click(page, '#submitted-link');
    await page.waitForSelector('#goal-title');
    const gid = await page.evaluate(() => decodeURIComponent(location.hash.split('/')[2]));

    step('a goal running live: its item, turn and last tool call');
    await page.waitForFunction(() => {
      const t = document.querySelector('#goal-running')?.textContent || '';
      return /turn 2/.test(t) && /last tool call: write: mul\.sh/.test(t);
    }, {timeout: 120000});
    assert.match(await page.$eval('#goal-running', (e) => e.textContent), /wi-1/);
    await shots(page, 'goal-running');

    step('its progress bar reaches 100 % through the event stream (no reload)');
    await page.waitForFunction(() => document.querySelector('#goal-head .bar')?.getAttribute('aria-valuenow') === '100',
      {timeout: 120000});
    assert.strictEqual(await page.evaluate(() => window.__noReload), 1, 'the page was reloaded');
    assert.strictEqual(await page.$eval('#live', (e) => e.textContent), 'live');
    await page.waitForSelector('#dag a.dag-node[data-key="wi-2"]');
    assert.strictEqual(await page.$eval('#goal-title', (e) => e.textContent), HOSTILE_TITLE);
    assert.strictEqual(await page.$$eval('#dag path.dag-edge', (e) => e.length), 1, 'one dependency edge');
    assert.match(await page.$eval('#dag a.dag-node[data-key="wi-1"]', (e) => e.getAttribute('class')), /st-done/);
    await page.waitForSelector('#budget');
    await noInjection(page, 'goal page', [HOSTILE_TITLE, '<script>window.__pwned=5</script>document mul']);

    step('events: filtered by type and item, each opens to its details, redacted');
    await page.waitForFunction(() => Array.from(document.querySelectorAll('#ev-type option')).some((o) => o.value === 'tool_call.failed'));
    await page.select('#ev-type', 'tool_call.failed');
    const wi2 = await page.$eval('#ev-item', (s) => Array.from(s.options).find((o) => o.textContent.startsWith('wi-2:')).value);
    await page.select('#ev-item', wi2);
    const types = await page.$$eval('#events > li', (lis) => lis.map((li) => li.getAttribute('data-type')));
    assert(types.length >= 1 && types.every((t) => t === 'tool_call.failed'), 'filtered by type: ' + types);
    await click(page, '#events > li:first-child summary');
    const payload = await page.$eval('#events > li:first-child pre.payload', (e) => e.textContent);
    assert(payload.includes('REDACTED'), 'the payload is redacted: ' + payload);
    assert(!payload.includes(SECRET) && !(await page.evaluate(() => document.body.textContent)).includes(SECRET),
      'the secret is nowhere on the page');
    await page.select('#ev-type', '');
    await page.select('#ev-item', '');
    await click(page, '#events > li:first-child summary');
    await shots(page, 'goal');

    step('the goals list: search by title, filter by status, paging');
    await click(page, 'nav a[href="#/goals"]');
    await page.waitForSelector(`#goals li[data-goal-id="${gid}"]`);
    await page.type('#goals-q', 'ASKS');
    await page.waitForFunction(() => {
      const t = Array.from(document.querySelectorAll('#goals li[data-goal-id] .title')).map((a) => a.textContent);
      return t.length === 1 && t[0] === 'a goal whose agent asks';
    });
    assert.match(await page.evaluate(() => location.hash), /q=ASKS/);
    await page.$eval('#goals-q', (e) => { e.value = ''; });
    await page.type('#goals-q', 'PWNED');
    await page.select('#goals-status', 'completed');
    await page.waitForFunction((gid) => {
      const rows = document.querySelectorAll('#goals li[data-goal-id]');
      return rows.length === 1 && rows[0].getAttribute('data-goal-id') === gid;
    }, {}, gid);
    await page.select('#goals-status', 'blocked');
    await page.waitForSelector('#no-goals');
    // two goals, pages of one: the next page has the other
    await page.goto(`${URL0}/#/goals?limit=1`);
    await page.waitForSelector('#next-page');
    const first = await page.$$eval('#goals li[data-goal-id]', (l) => l.map((x) => x.getAttribute('data-goal-id')));
    assert.strictEqual(first.length, 1, 'a page of one: ' + first);
    await click(page, '#next-page');
    await page.waitForFunction((f) => {
      const ids = Array.from(document.querySelectorAll('#goals li[data-goal-id]')).map((x) => x.getAttribute('data-goal-id'));
      return ids.length === 1 && ids[0] !== f && document.querySelector('#first-page');
    }, {}, first[0]);
    await click(page, '#first-page');
    await page.waitForFunction((f) => document.querySelector('#goals li[data-goal-id]')?.getAttribute('data-goal-id') === f, {}, first[0]);
    await noInjection(page, 'goals list', [HOSTILE_TITLE]);

    step('the item page: per-test results and each gate\'s output tail');
    await page.goto(`${URL0}/#/goals/${gid}/items/wi-1`);
    await page.waitForSelector('#tests tr[data-kind="fail_to_pass"]');
    const tests = await page.$$eval('#tests tr[data-kind]', (trs) =>
      Object.fromEntries(trs.map((tr) => [tr.getAttribute('data-kind'), tr.querySelector('.count').textContent])));
    for (const k of ['introduced', 'fixed', 'pre_existing', 'fail_to_pass'])
      assert(k in tests, 'the results have ' + k + ': ' + JSON.stringify(tests));
    assert.strictEqual(tests.introduced, '0', 'nothing introduced: ' + JSON.stringify(tests));
    const tail = await page.$eval('#gates li.gate pre.tail', (e) => e.textContent);
    assert.match(tail, /ok 1 - mul 2 3/, 'the gate output tail: ' + tail);
    const att = await page.$$eval('#attempts li.attempt', (lis) => lis.map((li) => li.textContent));
    assert(att.length >= 2, 'two attempts: ' + att.length);
    assert.match(att[0], /failed/);
    const failing = await page.$$eval('#attempts li.attempt:first-child ul.failing code', (c) => c.map((x) => x.textContent));
    assert(failing.length === 1 && failing[0].startsWith('mul 2 3'), 'attempt 1 failing tests: ' + failing);
    assert.match(await page.$eval('#attempts li.attempt:nth-child(2)', (e) => e.textContent), /success/);
    await shots(page, 'item');
    await page.goto(`${URL0}/#/goals/${gid}/items/wi-2`); // same document: the hash changes
    await page.waitForSelector('#item-title');
    await noInjection(page, 'item page', ['<script>window.__pwned=5</script>document mul']);

    step('resolve the escalation through its card: only the actions it allows');
    await click(page, 'nav a[href="#/escalations"]');
    await page.waitForSelector('#escalations li.escalation form');
    await noInjection(page, 'escalations', [HOSTILE_Q]);
    const offered = await page.$$eval('#escalations li.escalation select[name=action] option', (o) => o.map((x) => x.value));
    assert.deepStrictEqual(offered, ['retry', 'alternative', 'complete_partial', 'pause'], 'the actions an ask_human allows');
    await shots(page, 'escalations');
    await provoked(page, 422, async () => {
      await page.select('#escalations li.escalation select[name=action]', 'alternative');
      await click(page, '#escalations li.escalation button[type=submit]');
    }, () => /alternative/.test(document.querySelector('#escalations li.escalation p.error')?.textContent || ''));
    await page.select('#escalations li.escalation select[name=action]', 'retry');
    await page.type('#escalations li.escalation textarea[name=input]', 'keep the sign rules');
    await click(page, '#escalations li.escalation button[type=submit]');
    await page.waitForSelector('#no-escalations');
    const r = await page.evaluate(async (t) => (await fetch('/v1/escalations', {headers: {Authorization: 'Bearer ' + t}})).json(), TOKEN);
    assert.deepStrictEqual(r, [], 'the API has no open escalation');
    await noInjection(page, 'escalations after', []);

    step('a partial goal: resolved complete_partial from its own page, amber, skipped counted apart');
    await page.waitForFunction(async (t, g1) => {
      const r = await fetch('/v1/goals/' + g1, {headers: {Authorization: 'Bearer ' + t}});
      return (await r.json()).goal.status === 'completed';
    }, {timeout: 120000, polling: 500}, TOKEN, g1);
    const g3 = await page.evaluate(async (t, repo) => {
      const r = await fetch('/v1/goals', {method: 'POST', headers: {Authorization: 'Bearer ' + t, 'Content-Type': 'application/json'},
        body: JSON.stringify({title: 'a goal left partial', repo, base_branch: 'main', publish: {push: false, pull_request: false}})});
      return (await r.json()).id;
    }, TOKEN, process.env.GOALD_REPO);
    await page.goto(`${URL0}/#/goals/${g3}`);
    await page.waitForSelector('#goal-escalations li.escalation form', {timeout: 120000});
    await page.waitForFunction(() => /Blocked: /.test(document.querySelector('#goal-why')?.textContent || ''));
    const why3 = await page.$eval('#goal-why', (e) => e.textContent);
    assert.match(why3, /Which licence/, 'the question at the top: ' + why3);
    assert(await page.$eval('#goal-why', (e) => e.classList.contains('why-stop')), 'a blocked goal stops in red');
    await shots(page, 'goal-blocked');
    assert.strictEqual(await page.$eval('#goal-escalations .esc-item-title', (e) => e.textContent), 'pick a licence');
    await page.select('#goal-escalations li.escalation select[name=action]', 'complete_partial');
    await click(page, '#goal-escalations li.escalation button[type=submit]');
    await page.waitForSelector('#goal-partial', {timeout: 120000});
    await page.waitForFunction(() => /completed/.test(document.querySelector('#goal-head')?.textContent || ''), {timeout: 120000});
    const part = await page.evaluate(() => ({
      badge: document.querySelector('#goal-head .st-partial')?.textContent,
      bar: document.querySelector('#goal-head .bar')?.className,
      skipped: document.querySelector('#skipped-count')?.textContent,
      progress: document.querySelector('#goal-progress')?.textContent,
    }));
    assert.strictEqual(part.badge, 'partial', 'the partial badge: ' + JSON.stringify(part));
    assert.match(part.bar, /partial/, 'an amber bar');
    assert.match(part.skipped, /1 cancelled/, 'the items not done counted apart: ' + part.skipped);
    assert.match(part.progress, /1 of 2 items done · 1 cancelled/);
    await shots(page, 'goal-partial');
    await click(page, 'nav a[href="#/goals"]');
    await page.waitForSelector(`#goals li.partial[data-goal-id="${g3}"] .st-partial`);
    await page.waitForFunction(() => document.querySelectorAll('#goals li[data-goal-id]').length === 3);
    await shots(page, 'goals');

    assert.deepStrictEqual(problems, [], 'no off-origin request, console error or CSP violation');
  } catch (e) {
    failed = true;
    console.error('FAIL:', e && e.stack || e);
    if (problems.length) console.error('problems:', problems);
  } finally {
    await browser.close();
  }
  process.exit(failed ? 1 : 0);
})();
