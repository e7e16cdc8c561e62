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
const problems = [];
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
  assert.deepStrictEqual(r.scripts, [ORIGIN + '/static/app.js'], `${where}: scripts ${r.scripts}`);
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
      await page.click('#login button[type=submit]');
    }, () => /refused/.test(document.querySelector('#login-error')?.textContent || ''));
    await page.$eval('#token', (e) => { e.value = ''; });
    await page.type('#token', TOKEN);
    await page.click('#login button[type=submit]');
    await page.waitForSelector('#submit');
    assert.strictEqual(await page.evaluate(() => document.cookie), '', 'no cookie');

    step('submit: a 422 shown next to its field');
    await provoked(page, 422, async () => {
      await page.type('#f-title', 'x');
      await page.type('#f-budget-max_tokens', '-5');
      await page.click('#submit button[type=submit]');
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
    await page.click('#submit button[type=submit]');
    await page.waitForFunction(() => /^Submitted/.test(document.querySelector('#submit-error')?.textContent || ''));
    const gid = await page.waitForFunction((t) => {
      const row = Array.from(document.querySelectorAll('#goals li[data-goal-id]'))
        .find((li) => li.querySelector('.title').textContent === t);
      return row && row.getAttribute('data-goal-id');
    }, {}, HOSTILE_TITLE).then((h) => h.jsonValue());

    step('its progress bar reaches 100 % through the event stream (no reload)');
    await page.evaluate(() => { window.__noReload = 1; });
    await page.waitForFunction((gid) => {
      const bar = document.querySelector(`#goals li[data-goal-id="${gid}"] .bar`);
      return bar && bar.getAttribute('aria-valuenow') === '100';
    }, {timeout: 120000}, gid);
    assert.strictEqual(await page.evaluate(() => window.__noReload), 1, 'the page was reloaded');
    assert.strictEqual(await page.$eval('#live', (e) => e.textContent), 'live');
    await noInjection(page, 'goals list', [HOSTILE_TITLE]);
    await shots(page, 'goals');

    step('the goal page: report, DAG, live events');
    await page.click(`#goals li[data-goal-id="${gid}"] a.title`);
    await page.waitForSelector('#goal-title');
    await page.waitForSelector('#dag a.dag-node[data-key="wi-2"]');
    assert.strictEqual(await page.$eval('#goal-title', (e) => e.textContent), HOSTILE_TITLE);
    assert.strictEqual(await page.$$eval('#dag path.dag-edge', (e) => e.length), 1, 'one dependency edge');
    assert.match(await page.$eval('#dag a.dag-node[data-key="wi-1"]', (e) => e.getAttribute('class')), /st-done/);
    await page.waitForFunction(() => document.querySelectorAll('#events li').length > 0);
    await page.waitForSelector('#budget');
    await noInjection(page, 'goal page', [HOSTILE_TITLE, '<script>window.__pwned=5</script>document mul']);
    await shots(page, 'goal');

    step('the item whose first attempt failed shows its failing test');
    await page.click('#dag a.dag-node[data-key="wi-1"]');
    await page.waitForSelector('#attempts');
    const att = await page.$$eval('#attempts li.attempt', (lis) => lis.map((li) => li.textContent));
    assert(att.length >= 2, 'two attempts: ' + att.length);
    assert.match(att[0], /failed/);
    assert(att[0].includes('mul 2 3'), 'the failing test of attempt 1: ' + att[0]);
    const failing = await page.$$eval('#attempts li.attempt:first-child ul.failing code', (c) => c.map((x) => x.textContent));
    assert(failing.length === 1 && failing[0].startsWith('mul 2 3'), 'attempt 1 failing tests: ' + failing);
    assert.match(await page.$eval('#attempts li.attempt:nth-child(2)', (e) => e.textContent), /success/);
    await shots(page, 'item');
    await page.goto(`${URL0}/#/goals/${gid}/items/wi-2`); // same document: the hash changes
    await page.waitForSelector('#item-title');
    await noInjection(page, 'item page', ['<script>window.__pwned=5</script>document mul']);

    step('resolve the escalation through its form');
    await page.click('nav a[href="#/escalations"]');
    await page.waitForSelector('#escalations li.escalation');
    await noInjection(page, 'escalations', [HOSTILE_Q]);
    await shots(page, 'escalations');
    // skip is refused for an item waiting on an answer: the 422 is shown on the card
    await provoked(page, 422, async () => {
      await page.select('#escalations li.escalation select[name=action]', 'skip');
      await page.click('#escalations li.escalation button[type=submit]');
    }, () => /skip/.test(document.querySelector('#escalations li.escalation p.error')?.textContent || ''));
    await page.select('#escalations li.escalation select[name=action]', 'retry');
    await page.type('#escalations li.escalation textarea[name=input]', 'keep the sign rules');
    await page.click('#escalations li.escalation button[type=submit]');
    await page.waitForSelector('#no-escalations');
    const r = await page.evaluate(async (t) => (await fetch('/v1/escalations', {headers: {Authorization: 'Bearer ' + t}})).json(), TOKEN);
    assert.deepStrictEqual(r, [], 'the API has no open escalation');
    await noInjection(page, 'escalations after', []);

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
