// Browser tests of the explorer as people use it (issue 13): a Cancel that
// cancels, the URL as the one source of the view (edited hash, Back,
// Forward), the previous plan marked while a solve runs, no host link as a
// choice, and the first visit's welcome. Run through scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, open, waitForPlan, nextPlan, planId, text, importLongChain, BASE } from './helpers.mjs';

let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

// Watches the page's workers: every message each one posts (its kind) and
// when it was terminated, on the page's clock.
function watchWorkers() {
  const W = window.Worker;
  const log = { workers: [] };
  window.__workers = log;
  window.Worker = class extends W {
    constructor(...args) {
      super(...args);
      const me = { messages: [], terminated: null };
      log.workers.push(me);
      this.__me = me;
      this.addEventListener('message', (e) => {
        const d = typeof e.data === 'string' ? e.data : e.data?.text ?? '';
        me.messages.push({ t: performance.now(), kind: /^\{"(\w+)"|^"(\w+)"/.exec(d)?.slice(1).find(Boolean) ?? '?' });
      });
    }
    terminate() {
      this.__me.terminated = performance.now();
      super.terminate();
    }
  };
}

/// Clicks Cancel inside the page and returns, in ms after the click, when
/// the worker was terminated and when the page said "Cancelled".
async function cancelAndTime(page) {
  return page.evaluate(async () => {
    const log = window.__workers;
    const before = log.workers.filter((w) => w.terminated !== null).length;
    const t0 = performance.now();
    document.querySelector('#cancel-build').click();
    const clicked = performance.now();
    const terminated = log.workers.filter((w) => w.terminated !== null);
    const tTerm = terminated.length > before ? Math.max(...terminated.map((w) => w.terminated)) : null;
    // The page's words: polled every frame (what a person could see).
    let said = null;
    for (let i = 0; i < 120 && said === null; i++) {
      if (/Cancelled/.test(document.querySelector('#stale-plan')?.textContent ?? '')) said = performance.now();
      else await new Promise((r) => requestAnimationFrame(r));
    }
    return { handler: clicked - t0, terminated: tTerm === null ? null : tTerm - t0, said: said === null ? null : said - t0 };
  });
}

/// No progress (nor any answer) from a cancelled worker after its end, and
/// no progress from the fresh one for `ms`: the work really stopped.
async function assertStopped(page, ms = 1500) {
  const id = await planId(page);
  await page.waitForTimeout(ms);
  const late = await page.evaluate(() => window.__workers.workers.flatMap((w, i) =>
    w.messages.filter((m) => (w.terminated !== null && m.t > w.terminated) || (w.terminated === null && m.kind === 'Progress'))
      .map((m) => `${i}:${m.kind}`)));
  assert.deepEqual(late, [], 'no message after the cancel');
  assert.equal(await page.locator('#build-progress').count(), 0, 'no progress shown');
  assert.equal(await planId(page), id, 'no new plan arrived');
}

/// A page whose workers are watched, showing `algorithm`'s plan of an
/// imported chain of `n` stages; `shown`: that plan.
async function openWatched(n, algorithm = 'rotor') {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.addInitScript(watchWorkers);
  await page.goto(BASE + `#chain=teaching&algorithm=${algorithm}`);
  await waitForPlan(page);
  await importLongChain(page, n, 300000);
  const shown = { id: await planId(page), makespan: await text(page, '#stat-makespan') };
  return { page, errors, shown };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Fails if Cancel leaves the solve running. Tried: the plan effect reading
// every build again, as on main (Cancel's marking of the builds re-ran it):
// the solve restarted in the fresh worker at once and the page never said
// "Cancelled" — this test failed, as the observation did.
test('Cancel stops a 60-stage pofo solve at once, the previous plan stays marked, the next solve works', async () => {
  const { page, errors, shown } = await openWatched(60);
  const times = [];
  for (let round = 0; round < 3; round++) {
    if (round === 0) {
      await page.locator('#algorithm-select').selectOption('pofo');
    } else {
      await page.locator('#budget-slider').fill(String(300 + 100 * round));
    }
    await page.locator('#build-progress').waitFor();
    // While it solves, the plan on screen is marked as the previous one,
    // with its own budget next to the asked one. (No fixed wait: on a fast
    // machine the solve could end before it, and Cancel would come late.)
    await page.waitForFunction(() => /previous plan/.test(document.querySelector('#stale-plan')?.textContent ?? ''));
    assert.match(await page.getAttribute('.app', 'class'), /\bstale\b/);
    assert.match(await text(page, '#stale-plan'), /Showing the previous plan \(rotor\) at [\d.]+ [GM]iB while pofo at [\d.]+ [GM]iB is worked out/);
    if (round === 0) await page.screenshot({ path: join(process.env.SHOTS ?? tmpdir(), 'remat-stale-plan.png') });
    const t = await cancelAndTime(page);
    times.push(t);
    assert.ok(t.terminated !== null && t.terminated < 100, `terminated ${t.terminated} ms after the click`);
    // "At once" against work of seconds: the page's words follow within
    // 250 ms (a loaded CI run measured 103 ms, a frame or two of the page's
    // redraw after the termination; 12–48 ms on a quiet machine).
    assert.ok(t.said !== null && t.said < 250, `said "Cancelled" ${t.said} ms after the click`);
    assert.match(await text(page, '#stale-plan'), /Cancelled the pofo solve at .*Showing the previous plan \(rotor\)/);
    await assertStopped(page);
    assert.equal(await planId(page), shown.id);
    assert.equal(await text(page, '#stat-makespan'), shown.makespan, 'the previous plan stays');
    assert.match(await page.getAttribute('.app', 'class'), /\bstale\b/, 'still marked: its budget is not the asked one');
  }
  console.log(`cancel latency, 60-stage pofo (ms after the click): terminated ${times.map((t) => t.terminated.toFixed(1))}, page says Cancelled ${times.map((t) => t.said.toFixed(1))}; median ${median(times.map((t) => t.terminated)).toFixed(1)} / ${median(times.map((t) => t.said)).toFixed(1)}`);
  // The next solve runs in the fresh worker and is shown, unmarked.
  const t0 = Date.now();
  await page.locator('#budget-slider').fill('900');
  await nextPlan(page, shown.id, 300000);
  console.log(`the next pofo solve (60 stages, slider 900/1000) took ${Date.now() - t0} ms`);
  assert.match(await text(page, '#plan-status'), /✓|infeasible/);
  assert.doesNotMatch(await page.getAttribute('.app', 'class'), /\bstale\b/);
  assert.equal(await page.locator('#stale-plan').isVisible(), false);
  assert.deepEqual(errors, []);
  await page.close();
});

// Fails if the build goes on after Cancel, or the page does not say so
// (assertStopped: no message from the ended worker, no progress from the
// fresh one; not tried as a mutation: main's cancel already ended table
// builds, the 200-stage case was pofo's, covered above).
// Rotor's table at 400 stages, the slowest table the page builds (seconds
// here; revolve's, since SIMD128, is built before a person could click).
test('Cancel stops a 400-stage rotor table build at once; Build it builds it in a fresh worker', async () => {
  const { page, errors, shown } = await openWatched(400, 'revolve');
  const times = [];
  for (let round = 0; round < 3; round++) {
    if (round === 0) await page.locator('#algorithm-select').selectOption('rotor');
    else await page.locator('.status button', { hasText: 'Build it' }).click();
    await page.locator('#build-progress').waitFor();
    await page.waitForFunction(() => /previous plan \(revolve\) at .* while rotor at/.test(document.querySelector('#stale-plan')?.textContent ?? ''));
    const t = await cancelAndTime(page);
    times.push(t);
    assert.ok(t.terminated !== null && t.terminated < 100, `terminated ${t.terminated} ms after the click`);
    // "At once" against work of seconds: the page's words follow within
    // 250 ms (a loaded CI run measured 103 ms, a frame or two of the page's
    // redraw after the termination; 12–48 ms on a quiet machine).
    assert.ok(t.said !== null && t.said < 250, `said "Cancelled" ${t.said} ms after the click`);
    await assertStopped(page, 1000);
    assert.equal(await text(page, '#stat-makespan'), shown.makespan, 'the previous plan stays');
    assert.match(await text(page, '#stale-plan'), /Cancelled the rotor table build/);
  }
  console.log(`cancel latency, 400-stage rotor table (ms after the click): terminated ${times.map((t) => t.terminated.toFixed(1))}, page says Cancelled ${times.map((t) => t.said.toFixed(1))}; median ${median(times.map((t) => t.terminated)).toFixed(1)} / ${median(times.map((t) => t.said)).toFixed(1)}`);
  const t0 = Date.now();
  await page.locator('.status button', { hasText: 'Build it' }).click();
  await nextPlan(page, shown.id, 300000);
  console.log(`rotor's table for 400 stages, built in a fresh worker: ${Date.now() - t0} ms`);
  // 400 stages fall back to the grid: "≈ on a grid" where it rounds a lot.
  assert.match(await text(page, '#plan-status'), /✓|≈ on a grid|infeasible/);
  assert.equal(await page.locator('#stale-plan').isVisible(), false);
  assert.deepEqual(errors, []);
  await page.close();
});

const chainName = (page) => page.evaluate(() => document.querySelector('.chain-about strong').textContent);
const algorithm = (page) => page.locator('#algorithm-select').inputValue();

// Fails if the page ignores a link it arrives at. Tried: no hashchange /
// popstate listener: the page stayed on the teaching chain (timeout). An
// earlier build that let the second of the two events forget the entry
// (so the next view replaced it) failed here at the second Back.
test('the URL holds the view both ways: an edited hash, Back and Forward', async () => {
  const { page, errors } = await open(context, '#chain=teaching&algorithm=rotor');
  const teaching = await chainName(page);
  await page.waitForFunction(() => /budget=\d+/.test(location.hash));
  const first = await page.evaluate(() => location.hash);

  // An edited hash: the page follows (chain, algorithm, budget).
  let id = await planId(page);
  await page.evaluate(() => { location.hash = '#chain=resnet50-h100&algorithm=revolve&budget=3000000000&bandwidth=24000000000'; });
  await nextPlan(page, id);
  assert.match(await chainName(page), /ResNet-50/i);
  assert.equal(await algorithm(page), 'revolve');
  assert.match(await page.locator('#budget-input').inputValue(), /2\.79 GiB|3\.00 GB|2\.8/);
  assert.match(await page.locator('#bandwidth-input').inputValue(), /24\.0 GB\/s/);

  // A new algorithm is a new entry; a slider drag one more.
  id = await planId(page);
  await page.locator('#algorithm-select').selectOption('rotor');
  await nextPlan(page, id);
  await page.waitForFunction(() => location.hash.includes('algorithm=rotor') && location.hash.includes('resnet50'));
  id = await planId(page);
  await page.locator('#budget-slider').fill('200');
  await nextPlan(page, id);
  await page.waitForFunction(() => !location.hash.includes('budget=3000000000'));
  const dragged = await page.evaluate(() => location.hash);

  // Back walks the views, and the page shows what the URL names.
  await page.goBack();
  await page.waitForFunction(() => location.hash.includes('budget=3000000000'));
  await page.waitForFunction(() => document.querySelector('#budget-input').value !== '');
  assert.equal(await algorithm(page), 'rotor');
  assert.match(await page.locator('#budget-input').inputValue(), /2\.79 GiB/);
  await page.goBack();
  await page.waitForFunction(() => location.hash.includes('algorithm=revolve'));
  await page.waitForFunction(() => document.querySelector('#algorithm-select').value === 'revolve');
  assert.match(await chainName(page), /ResNet-50/i);
  await page.goBack();
  await page.waitForFunction((f) => location.hash === f, first);
  await page.waitForFunction((t) => document.querySelector('.chain-about strong').textContent === t, teaching);
  assert.equal(await algorithm(page), 'rotor');
  // Forward, three times: back at the dragged budget.
  for (let i = 0; i < 3; i++) await page.goForward();
  await page.waitForFunction((d) => location.hash === d, dragged);
  await page.waitForFunction(() => /ResNet-50/i.test(document.querySelector('.chain-about strong').textContent));
  await page.waitForFunction(() => document.querySelector('#algorithm-select').value === 'rotor');
  assert.equal(await page.locator('#budget-slider').inputValue(), '200');
  assert.deepEqual(errors, []);
  await page.close();
});

// Fails if "none" is refused or silently becomes a rate. Tried: parse_link
// without the "none" case: the typed "none" was refused, no plan came. An
// earlier build that sent None (the solvers then fall back on the chain's
// own link) failed on the CLI comparison.
test('no host link is a choice: the offloading algorithms say they need one, as the CLI does; the URL holds it', async () => {
  const { page, errors } = await open(context, '#chain=teaching&algorithm=offload-only');
  let id = await planId(page);
  await page.locator('#bandwidth-preset').selectOption('0');
  await nextPlan(page, id);
  assert.equal(await page.locator('#bandwidth-input').inputValue(), 'none');
  await page.waitForFunction(() => location.hash.includes('bandwidth=none'));

  // The CLI's words for the same chain and budget, without a link.
  const cliDetail = (alg, budget) => {
    const dir = mkdtempSync(join(tmpdir(), 'remat-nolink-'));
    const file = join(dir, 'teaching.json');
    execFileSync(process.env.REMAT_CLI, ['examples', '--write', 'teaching', '-o', file]);
    const chain = JSON.parse(execFileSync('cat', [file]));
    delete chain.bandwidth_bytes_per_s;
    writeFileSync(file, JSON.stringify(chain));
    const out = execFileSync(process.env.REMAT_CLI, ['solve', '-a', alg, '-b', String(budget), file]).toString();
    return /^algorithm\s+\S+ \((.*)\)$/m.exec(out)[1];
  };
  const budget = await page.evaluate(() => Number(/budget=(\d+)/.exec(location.hash)[1]));
  const offloadOnly = cliDetail('offload-only', budget);
  assert.match(offloadOnly, /no host link/);
  assert.ok((await text(page, '#plan-status')).includes(offloadOnly), `${await text(page, '#plan-status')} vs CLI ${offloadOnly}`);
  id = await planId(page);
  await page.locator('#algorithm-select').selectOption('opportunist');
  await nextPlan(page, id);
  const opportunist = cliDetail('opportunist', budget);
  assert.match(opportunist, /needs a host↔device bandwidth/);
  assert.ok((await text(page, '#plan-status')).includes(opportunist));

  // A link with bandwidth=none opens without a link; a typed rate gives it back.
  const second = await open(context, '#chain=teaching&algorithm=pofo&bandwidth=none');
  assert.equal(await second.page.locator('#bandwidth-input').inputValue(), 'none');
  assert.match(await text(second.page, '#plan-status'), /no host link/);
  id = await planId(second.page);
  await second.page.locator('#bandwidth-input').fill('12 GB/s');
  await second.page.locator('#bandwidth-input').press('Enter');
  await nextPlan(second.page, id);
  assert.doesNotMatch(await text(second.page, '#plan-status'), /no host link/);
  await second.page.waitForFunction(() => location.hash.includes('bandwidth=12000000000'));
  // And typed: "none".
  id = await planId(second.page);
  await second.page.locator('#bandwidth-input').fill('none');
  await second.page.locator('#bandwidth-input').press('Enter');
  await nextPlan(second.page, id);
  assert.match(await text(second.page, '#plan-status'), /no host link/);
  assert.equal(await second.page.locator('.bw .err').count(), 0, 'no error under the box');
  await second.page.waitForFunction(() => location.hash.includes('bandwidth=none'));
  assert.deepEqual([...errors, ...second.errors], []);
  await page.close();
  await second.page.close();
});

// Fails if the welcome shows again after it was seen (tried:
// wants_welcome without the localStorage check: shown on the second visit),
// if a reload before answering loses it (the page writes its view into the
// URL at once; tried: without the session's pending flag, gone on reload),
// or if the guide keeps the previous chain's host link while its text
// reasons at 12 GB/s (vgg19-h100 has 54 GB/s).
test('a first visit is welcomed into the guide on the teaching chain, once', async () => {
  const fresh = await launch({ welcome: true });
  try {
    const { page, errors } = await open(fresh);
    await page.locator('#welcome').waitFor();
    await page.reload();
    await page.locator('#welcome').waitFor();
    await page.screenshot({ path: join(process.env.SHOTS ?? tmpdir(), 'remat-welcome.png') });
    // M_low / M_high are said where the slider is.
    assert.match(await text(page, '#budget-range-help'), /activations only.*M_low.*M_high/s);
    const id = await planId(page);
    await page.locator('#welcome-guide').click();
    await nextPlan(page, id);
    assert.match(await chainName(page), /teaching/);
    assert.equal(await page.locator('#bandwidth-input').inputValue(), '12.0 GB/s');
    assert.equal(await page.locator('#guide details').getAttribute('open'), '');
    assert.equal(await page.locator('#welcome').count(), 0);
    // The guide's heading starts below the sticky bar (issue 45: it and
    // the first paragraph were under it, `scroll_into_view` putting the
    // card's top at the window's).
    const below = await page.evaluate(() => document.querySelector('#guide summary').getBoundingClientRect().top
      - document.querySelector('.bar').getBoundingClientRect().bottom);
    assert.ok(below >= 0, `the guide's heading is ${-below} px under the bar`);
    // Remembered: not again, even without a link.
    const again = await open(fresh);
    assert.equal(await again.page.locator('#welcome').count(), 0);
    assert.deepEqual([...errors, ...again.errors], []);
  } finally {
    await fresh.close();
  }
  // A link that names a view is not interrupted, even on a first visit.
  const linked = await launch({ welcome: true });
  try {
    const { page } = await open(linked, '#chain=vgg19-h100&algorithm=rotor');
    assert.equal(await page.locator('#welcome').count(), 0);
    // Dismissed: remembered too.
    const plain = await open(linked);
    await plain.page.locator('#welcome-dismiss').click();
    assert.equal(await plain.page.locator('#welcome').count(), 0);
    const after = await open(linked);
    assert.equal(await after.page.locator('#welcome').count(), 0);
  } finally {
    await linked.close();
  }
});

// Fails if a link's budget below the floor is planned (the page would show
// "infeasible" for what the CLI refuses with exit 2) or silently dropped.
test('a link whose budget is below the floor says so and keeps a plannable budget', async () => {
  const { page, errors } = await open(context, '#chain=teaching&algorithm=rotor&budget=1000');
  const notice = page.locator('#notice');
  await notice.waitFor();
  assert.match(await notice.innerText(), /The budget asked for, 1000 B, is below 320 MiB, the least memory any schedule of this chain needs; it was not applied\./);
  // Half-way between M_low (384 MiB) and M_high: a plan, not an infeasible budget.
  assert.match(await text(page, '#plan-status'), /✓/);
  const shown = await page.locator('#budget-input').inputValue();
  // The same chain, an edited hash: refused again, the budget stays.
  await page.locator('#notice button').click();
  await page.evaluate(() => { location.hash = '#chain=teaching&algorithm=rotor&budget=2000&bandwidth=12000000000'; });
  await notice.waitFor();
  assert.match(await notice.innerText(), /2\.00 kB|1\.95 KiB|2000 B/);
  assert.equal(await page.locator('#budget-input').inputValue(), shown);
  assert.deepEqual(errors, []);
  await page.close();
});

// A chain picked from the list takes its own host link, or the default
// (12 GB/s, PCIe 3.0 ×16) where it states none: never the previous
// chain's. Fails on the page before issue 45, where GPT-2 H200 (no link
// stated) kept VGG-19's 54 GB/s and the preset read "custom".
test('a picked chain never keeps the previous chain host link', async () => {
  const { page, errors } = await open(context, '#chain=vgg19-h100&algorithm=rotor');
  const link = async () => ({
    text: await page.locator('#bandwidth-input').inputValue(),
    preset: await page.locator('#bandwidth-preset').inputValue(),
  });
  const vgg = await link();
  assert.match(vgg.text, /^54(\.\d+)? GB\/s$/, JSON.stringify(vgg));
  await page.selectOption('#chain-select', 'gpt2-h200-torch');
  await page.waitForFunction(() => document.querySelector('#chain-select').value === 'gpt2-h200-torch');
  await page.waitForFunction(() => !/^54/.test(document.querySelector('#bandwidth-input').value));
  const gpt2 = await link();
  assert.match(gpt2.text, /^12(\.0+)? GB\/s$/, JSON.stringify(gpt2));
  assert.equal(gpt2.preset, '12000000000', JSON.stringify(gpt2));
  assert.deepEqual(errors, []);
  await page.close();
});

// "Build all tables" on a chain whose tables are built in the worker: each
// table's compare row is filled at the budget on screen as it arrives, the
// slider untouched. Fails on the page before issue 45 (every row read
// "not built" until the slider moved, though the curves filled in: no
// compare row was added when a table arrived, which `add_compare_row` now
// does).
test('Build all tables fills the compare rows at the budget on screen', async () => {
  const { page, errors } = await open(context, '#chain=teaching');
  await importLongChain(page, 70);
  const budget = await page.locator('#budget-slider').inputValue();
  await page.locator('#build-all').click();
  await page.waitForFunction(() => !document.querySelector('#build-all')
    && [...document.querySelectorAll('#compare-table tbody tr')].every((r) => !/building/.test(r.textContent)),
    null, { timeout: 180000 });
  const rows = await page.locator('#compare-table tbody tr').evaluateAll((trs) => trs.map((t) => t.textContent));
  console.log(rows.join('\n'));
  for (const name of ['sequential', 'revolve', 'rotor']) {
    const row = rows.find((r) => r.startsWith(name));
    assert.ok(row, `${name} in ${rows}`);
    assert.doesNotMatch(row, /not built/, row);
    assert.match(row, /^\S+\s*[✓✗]/, row);
  }
  assert.equal(await page.locator('#budget-slider').inputValue(), budget, 'the slider did not move');
  assert.deepEqual(errors, []);
  await page.close();
});

// The overhead-vs-budget figure is readable when one curve is far above
// the rest: recompute-all (+506 % on VGG-19) is clipped at the top and
// named with its height, and the axis is set by the others (issue 45:
// every other algorithm sat on 0 %). Fails on the page before, which had
// no such note and an axis past +500 %.
test('the overhead figure clips a curve far above the rest and says so', async () => {
  const { page, errors } = await open(context, '#chain=vgg19-h100&algorithm=rotor');
  await page.locator('#curves-clipped').waitFor({ timeout: 60000 });
  const note = await text(page, '#curves-clipped');
  assert.match(note, /^recompute-all reaches \+[\d.,]+\s?%: its curve is clipped at the top/, note);
  const ticks = await page.locator('#curves-svg text').allTextContents();
  const top = Math.max(...ticks.map((t) => /^\+?([\d.]+)\s?%$/.exec(t.trim())?.[1]).filter(Boolean).map(Number));
  assert.ok(top < 300, `the axis reaches ${top} % (${ticks.join(' | ')})`);
  assert.deepEqual(errors, []);
  await page.close();
});
