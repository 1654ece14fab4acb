// Browser tests of the explorer's longer workflows: a cancelled build in the
// worker, drag-and-drop import, the exact re-plan, the trace export and the
// layout at 1024×768. Run through scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, open, waitForPlan, nextPlan, planId, text, importFile, importLongChain, BASE } from './helpers.mjs';

let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

test('a long build shows progress; Cancel stops it and the page keeps planning', async () => {
  const { page, errors } = await open(context, '#chain=teaching');
  // L = 300: every rotor/revolve table is built in the worker (seconds).
  await importLongChain(page, 300);
  assert.match(await text(page, '#plan-status'), /\(worker\)/);
  const shown = { id: await planId(page), makespan: await text(page, '#stat-makespan') };

  // Revolve's table is not built yet: choosing it starts a long build.
  await page.locator('#algorithm-select').selectOption('revolve');
  await page.locator('#build-progress').waitFor();
  await page.locator('#cancel-build').click();
  await page.waitForFunction(() => document.querySelector('.status').textContent.includes('was not built'));
  assert.equal(await page.locator('#build-progress').count(), 0);
  // The previous plan stays on screen.
  assert.equal(await planId(page), shown.id);
  assert.equal(await text(page, '#stat-makespan'), shown.makespan);
  assert.ok(await page.locator('#memory-svg path').count() > 0, 'the memory chart still shows the plan');

  // The page answers at once, and rotor's table (already moved to the page)
  // still plans every slider move.
  const t0 = Date.now();
  await page.evaluate(() => 1 + 1);
  assert.ok(Date.now() - t0 < 1000, 'the page is responsive');
  await page.locator('#algorithm-select').selectOption('rotor');
  await nextPlan(page, shown.id, 5000);
  const id = await planId(page);
  await page.locator('#budget-slider').fill('200');
  await nextPlan(page, id, 5000);
  // This chain's breakpoints would pass the grid's memory: it is planned
  // on the grid, feasible, and the line says what the rounding may cost.
  assert.match(await text(page, '#plan-status'), /✓|≈ on a grid/);

  // At the slider's left end (the least its grid plans fit) the grid
  // rounds a lot: an exact re-plan builds a table in the worker, with
  // progress, and can be cancelled too.
  const id2 = await planId(page);
  await page.locator('#budget-slider').fill('0');
  await nextPlan(page, id2, 5000);
  assert.match(await text(page, '#plan-status'), /≈ on a grid/);
  await page.locator('#replan-exact').click();
  await page.locator('#build-progress').waitFor();
  assert.match(await text(page, '.status'), /Re-planning exactly/);
  await page.locator('#cancel-build').click();
  await page.waitForFunction(() => /≈ on a grid/.test(document.querySelector('#plan-status').textContent));
  assert.equal(await page.locator('#build-progress').count(), 0);

  // "Build it" starts a fresh worker, which builds the table again.
  await page.locator('#algorithm-select').selectOption('revolve');
  await page.locator('.status button', { hasText: 'Build it' }).click();
  await page.locator('#build-progress').waitFor();
  const before = await planId(page);
  await nextPlan(page, before, 120000);
  assert.match(await text(page, '#plan-status'), /✓|≈ on a grid|infeasible/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('dropping a chain file on the page imports it', async () => {
  const { page, errors } = await open(context, '#chain=teaching');
  const chain = readFileSync(new URL('./fixtures/six-stages.json', import.meta.url), 'utf8');
  const prevented = await page.evaluate((json) => {
    const dt = new DataTransfer();
    dt.items.add(new File([json], 'six.json', { type: 'application/json' }));
    const over = new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true });
    document.querySelector('#memory-svg').dispatchEvent(over);
    const drop = new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true });
    document.querySelector('#memory-svg').dispatchEvent(drop);
    // Without preventDefault the browser would open the file instead.
    return over.defaultPrevented && drop.defaultPrevented;
  }, chain);
  assert.ok(prevented, 'dragover and drop are taken by the page');
  await page.waitForFunction(() => document.querySelector('.chain-about').textContent.includes('six stages'));
  assert.match(await text(page, '#notice'), /Imported six\.json: 6 stages/);
  await page.waitForFunction(() => location.hash.includes('chain=imported'));
  await waitForPlan(page);
  assert.deepEqual(errors, []);
  await page.close();
});

test('M_low, where the old slot grid had no plan, is met at once and exactly', async () => {
  // Teaching chain: a^ℓ = 64 MiB, ā^ℓ = 128 MiB, M_low = 384 MiB. The
  // slider's table used to be 500 slots of 2.82 MiB, on which each held
  // 64 MiB rounded up to 23 slots and M_low had no schedule; the breakpoint
  // table is exact in bytes, so M_low is met with no re-plan. Fails if the
  // page planned on the grid again ("infeasible on the grid").
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(BASE + '#chain=teaching&algorithm=rotor&budget=402653184');
  await waitForPlan(page);
  const status = await text(page, '#plan-status');
  assert.match(status, /^✓ exact: \d+ breakpoints in bytes/);
  assert.equal(await page.locator('#replan-exact').count(), 0);
  const peak = await text(page, '#stat-peak');
  assert.match(peak, /MiB/);
  assert.ok(parseFloat(peak) <= 384, `peak ${peak} fits 384 MiB`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the Trace export is Chrome trace-event JSON', async () => {
  const { page, errors } = await open(context, '#chain=teaching&algorithm=rotor&budget=500000000');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('#export-trace').click(),
  ]);
  assert.match(download.suggestedFilename(), /\.trace\.json$/);
  const file = join(mkdtempSync(join(tmpdir(), 'remat-trace-')), 'trace.json');
  await download.saveAs(file);
  const trace = JSON.parse(readFileSync(file, 'utf8'));
  assert.ok(Array.isArray(trace.traceEvents), 'traceEvents is an array');
  const spans = trace.traceEvents.filter((e) => e.ph === 'X');
  assert.equal(String(spans.length), (await text(page, '#stat-ops')).trim(), 'one X event per op');
  for (const e of spans) {
    assert.equal(typeof e.name, 'string');
    assert.ok(Number.isFinite(e.ts) && e.ts >= 0, 'ts in µs');
    assert.ok(Number.isFinite(e.dur) && e.dur >= 0, 'dur in µs');
    assert.ok(e.pid !== undefined && e.tid !== undefined);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

test('at 1024×768 the page has no horizontal scrollbar', async () => {
  const page = await context.newPage();
  await page.setViewportSize({ width: 1024, height: 768 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(BASE + '#chain=vgg19');
  await waitForPlan(page);
  const sizes = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
    wide: [...document.querySelectorAll('.app *')]
      .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5)
      .map((el) => el.tagName + (el.id ? '#' + el.id : '') + '.' + el.className).slice(0, 5),
  }));
  assert.ok(sizes.scroll <= sizes.inner, `scrollWidth ${sizes.scroll} > ${sizes.inner}: ${sizes.wide}`);
  // The main controls are all on screen.
  for (const sel of ['#budget-slider', '#budget-input', '#algorithm-select', '#bandwidth-input', '#chain-select']) {
    const box = await page.locator(sel).boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 1024, `${sel} within the viewport`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

test('the guide opens, explains the ops and steps through the teaching chain', async () => {
  const { page, errors } = await open(context, '#chain=vgg19');
  await page.locator('#guide summary').click();
  const guide = await text(page, '#guide');
  for (const word of ['Offload', 'Prefetch', '64 MiB', '128 MiB', 'recomputed', 'checkpoint']) {
    assert.ok(guide.includes(word), `the guide mentions ${word}`);
  }
  assert.ok(await page.locator('#guide dt sub').count() >= 3, 'F_all, F_ck, F_∅ drawn with subscripts');
  await page.locator('#guide-play').click();
  await page.waitForFunction(() => document.querySelector('.chain-about').textContent.includes('teaching'));
  await page.locator('#step-explain .opname').waitFor();
  assert.match(await page.locator('#step-play').innerText(), /Pause/);
  assert.equal(await page.locator('#budget-input').inputValue(), '572 MiB');
  await page.locator('#step-clear').click();
  assert.deepEqual(errors, []);
  await page.close();
});

test('an imported schedule is judged like `remat simulate`: incomplete ones are refused', async () => {
  // Issue 9.1: the page refuses a schedule that never produces δ^0, naming
  // the first missing backward, and keeps the current plan.
  const { page, errors } = await open(context, '#chain=teaching&algorithm=rotor&budget=900000000');
  const opsBefore = await text(page, '#stat-ops');
  const upload = (name, doc) => importFile(page, name, doc);
  const fwd = Array.from({ length: 10 }, (_, i) => ({ op: 'forward_all', stage: i + 1 }));
  const bwd = Array.from({ length: 10 }, (_, i) => ({ op: 'backward', stage: 10 - i }));
  await upload('truncated.json', { format: 'remat-schedule/1', budget_bytes: 2e9, ops: [...fwd, ...bwd.slice(0, 9)] });
  await page.waitForFunction(() => /Refused truncated\.json/.test(document.querySelector('#notice')?.textContent ?? ''));
  const refused = await text(page, '#notice');
  assert.match(refused, /op 19 \(B/);
  assert.match(refused, /missing/);
  assert.equal(await text(page, '#stat-ops'), opsBefore, 'the plan shown before stays');
  // The complete store-all schedule is shown, with a warning for its missing digest.
  await upload('store-all.json', { format: 'remat-schedule/1', budget_bytes: 2e9, ops: [...fwd, ...bwd] });
  await page.waitForFunction(() => /Showing store-all\.json/.test(document.querySelector('#notice')?.textContent ?? ''));
  assert.match(await text(page, '#notice'), /chain_digest: absent/);
  assert.equal((await text(page, '#stat-ops')).trim(), '20');
  // The controls name another plan than the one shown: they say they are
  // not in force (issue 26: three budgets on one screen), until "back to
  // the plan" shows the controls' plan again. (Against the page before:
  // no #imported-schedule, the locator timed out.)
  assert.match(await text(page, '#imported-schedule'), /store-all\.json.*budget 1\.86 GiB.*not in force/s);
  assert.match(await page.locator('.app').getAttribute('class'), /not-in-force/);
  const id = await planId(page);
  await page.locator('#back-to-plan').click();
  await nextPlan(page, id);
  assert.equal(await page.locator('#imported-schedule').count(), 0);
  assert.doesNotMatch(await page.locator('.app').getAttribute('class'), /not-in-force/);
  assert.equal(await text(page, '#stat-ops'), opsBefore, 'the controls\' plan is back');
  assert.deepEqual(errors, []);
  await page.close();
});
