// End-to-end tests of the explorer in a real browser (Debian chromium).
// Run through scripts/browser-tests.sh, which builds and serves the page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, open, waitForPlan, nextPlan, planId, text, importFile, BASE } from './helpers.mjs';

const CLI = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

test('the page loads an example with no page errors and draws every view', async () => {
  const { page, errors } = await open(context, '#chain=vgg19');
  assert.match(await text(page, '.chain-about'), /VGG-19/);
  for (const id of ['#stat-makespan', '#stat-peak', '#stat-overhead']) {
    assert.notEqual((await text(page, id)).trim(), '—', id);
  }
  // Shapes are batched into one <path> per colour: count the subpaths.
  const shapes = (id) => page.evaluate((sel) => [...document.querySelectorAll(sel + ' path')]
    .map((p) => (p.getAttribute('d') || '').split('M').length - 1).reduce((a, b) => a + b, 0), id);
  assert.ok(await shapes('#memory-svg') > 20, 'memory chart has tensor bands');
  assert.ok(await shapes('#timeline-svg') > 40, 'timeline has op spans');
  assert.ok(await shapes('#chain-svg') >= 24, 'chain has one box per stage');
  await page.waitForFunction(() => document.querySelectorAll('#compare-table td.yes').length >= 2);
  assert.deepEqual(errors, []);
  await page.close();
});

test('moving the slider re-plans and changes the numbers and the charts', async () => {
  const { page, errors } = await open(context, '#chain=teaching&algorithm=rotor');
  const high = { peak: await text(page, '#stat-peak') };
  await page.locator('#budget-slider').fill('1000');
  await page.waitForFunction(() => document.querySelector('#stat-recomputations').textContent.trim() === '0');
  const top = {
    peak: await text(page, '#stat-peak'),
    memory: await page.locator('#memory-svg').innerHTML(),
    overhead: await text(page, '#stat-overhead'),
  };
  const id = await planId(page);
  await page.locator('#budget-slider').fill('150');
  await nextPlan(page, id);
  const low = {
    peak: await text(page, '#stat-peak'),
    memory: await page.locator('#memory-svg').innerHTML(),
    overhead: await text(page, '#stat-overhead'),
    recomputations: Number(await text(page, '#stat-recomputations')),
  };
  assert.notEqual(low.peak, top.peak);
  assert.notEqual(low.overhead, top.overhead);
  assert.ok(low.recomputations > 0, 'a low budget recomputes');
  assert.notEqual(low.memory, top.memory, 'the memory chart was redrawn');
  assert.match(await page.locator('#budget-input').inputValue(), /MiB|GiB/);
  // A typed budget with units.
  const id2 = await planId(page);
  await page.locator('#budget-input').fill('1 GiB');
  await page.locator('#budget-input').press('Enter');
  await nextPlan(page, id2);
  assert.equal(await page.locator('#budget-input').inputValue(), '1.00 GiB');
  assert.ok(high.peak);
  // Timing marks exist only with ?timing (tests/measure-slider.mjs).
  assert.equal(await page.evaluate(() => typeof window.__rematMarks), 'undefined');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a bad chain file shows the error naming the field and keeps the old chain', async () => {
  const { page, errors } = await open(context, '#chain=teaching');
  const before = await text(page, '.chain-about');
  const bad = {
    format: 'remat-chain/1', name: 'broken', input_bytes: 1000,
    stages: [
      { name: 'a', forward_seconds: 0.001, backward_seconds: 0.002, output_bytes: 100, saved_bytes: 200 },
      { name: 'b', forward_seconds: 0.001, backward_seconds: 0.002, output_bytes: 300, saved_bytes: 200 },
    ],
  };
  await importFile(page, 'broken.json', bad);
  const notice = page.locator('#notice');
  await notice.waitFor();
  assert.match(await notice.innerText(), /stages\[1\]\.saved_bytes/);
  assert.equal(await text(page, '.chain-about'), before, 'the previous chain stays loaded');
  assert.notEqual((await text(page, '#stat-makespan')).trim(), '—');
  assert.deepEqual(errors, []);
  await page.close();
});

test('an exported schedule validates with `remat simulate`', async (t) => {
  if (!existsSync(CLI)) {
    t.skip(`CLI not built at ${CLI} (cargo build --release -p remat-cli)`);
    return;
  }
  const { page, errors } = await open(context, '#chain=teaching&algorithm=rotor');
  const id = await planId(page);
  await page.locator('#budget-slider').fill('300');
  await nextPlan(page, id);
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('#export-schedule').click(),
  ]);
  const dir = mkdtempSync(join(tmpdir(), 'remat-export-'));
  const file = join(dir, 'schedule.json');
  await download.saveAs(file);
  const schedule = JSON.parse(readFileSync(file, 'utf8'));
  assert.equal(schedule.format, 'remat-schedule/1');
  assert.ok(schedule.ops.length > 0);
  const out = execFileSync(CLI, ['simulate', 'example:teaching', file, '--json'], { encoding: 'utf8' });
  const result = JSON.parse(out);
  assert.equal(result.feasible, true);
  assert.ok(Math.abs(result.makespan_seconds - schedule.predicted.makespan_seconds) < 1e-9);
  assert.equal(result.peak_bytes, schedule.predicted.peak_bytes);
  assert.ok(result.peak_bytes <= schedule.budget_bytes);
  // The chain export round-trips through the CLI too.
  const [chainDl] = await Promise.all([page.waitForEvent('download'), page.locator('#export-chain').click()]);
  const chainFile = join(dir, 'chain.json');
  await chainDl.saveAs(chainFile);
  const again = JSON.parse(execFileSync(CLI, ['simulate', chainFile, file, '--json'], { encoding: 'utf8' }));
  assert.equal(again.peak_bytes, result.peak_bytes);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the URL round-trips algorithm, budget, bandwidth and chain', async () => {
  const { page, errors } = await open(context, '#chain=resnet50');
  await page.locator('#algorithm-select').selectOption('revolve');
  const id = await planId(page);
  await page.locator('#budget-slider').fill('420');
  await nextPlan(page, id);
  await page.locator('#bandwidth-input').fill('16 GB/s');
  await page.locator('#bandwidth-input').press('Enter');
  await page.waitForFunction(() => location.hash.includes('bandwidth=16000000000'));
  const url = page.url();
  const shown = {
    budget: await page.locator('#budget-input').inputValue(),
    makespan: await text(page, '#stat-makespan'),
    peak: await text(page, '#stat-peak'),
  };
  await page.close();
  const second = await open(context, url.slice(BASE.length));
  assert.equal(await second.page.locator('#algorithm-select').inputValue(), 'revolve');
  assert.equal(await second.page.locator('#chain-select').inputValue(), 'resnet50');
  assert.equal(await second.page.locator('#budget-input').inputValue(), shown.budget);
  assert.equal(await second.page.locator('#bandwidth-input').inputValue(), '16.0 GB/s');
  assert.equal(await text(second.page, '#stat-makespan'), shown.makespan);
  assert.equal(await text(second.page, '#stat-peak'), shown.peak);
  assert.deepEqual([...errors, ...second.errors], []);
  await second.page.close();
});

test('an imported chain survives a reload', async () => {
  const { page, errors } = await open(context, '#chain=teaching');
  const chain = JSON.parse(readFileSync(new URL('./fixtures/six-stages.json', import.meta.url), 'utf8'));
  await importFile(page, 'six.json', chain);
  await page.waitForFunction(() => document.querySelector('.chain-about').textContent.includes('six stages'));
  await page.waitForFunction(() => location.hash.includes('chain=imported'));
  await page.reload();
  await waitForPlan(page);
  assert.match(await text(page, '.chain-about'), /six stages/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('step-through highlights the op in every view and explains it', async () => {
  const { page, errors } = await open(context, '#chain=teaching&algorithm=rotor&budget=700000000');
  await page.locator('#step-next').click();
  await page.locator('#step-next').click();
  assert.match(await text(page, '#step-explain'), /op 2 \/ \d+/);
  assert.match(await page.locator('#step-explain .opname').getAttribute('data-op'), /F_(all|ck|∅)\^2/);
  assert.equal(await page.locator('#step-explain .opname sup').first().innerText(), '2', 'the stage as a superscript');
  assert.equal(await page.locator('#timeline-current').count(), 1);
  assert.equal(await page.locator('#chain-current').count(), 1);
  assert.ok(await page.locator('#memory-svg line[stroke="#1d2430"]').count() >= 1, 'memory cursor');
  assert.deepEqual(errors, []);
  await page.close();
});
