// Browser tests of the simulated dynamic runtimes (dtr, delta) in the
// explorer: their release ops R(…) in the stepper, the timeline and the
// chain view. The schedule is compared with the CLI's for the same inputs.
// Run through scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { launch, open, text } from './helpers.mjs';

const CLI = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
const BUDGET = 599785472;
const SHOTS = process.env.SHOTS_DIR ?? tmpdir();

let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

/// The CLI's dtr schedule for the teaching chain at BUDGET.
function cliDtr() {
  return JSON.parse(execFileSync(CLI, ['solve', 'example:teaching', '--algorithm', 'dtr', '--budget', String(BUDGET), '--json']).toString());
}

/// `R(ā^3)` as the core writes it, from a file op.
function symbol(o) {
  return `R(${o.tensor === 'saved' ? 'ā' : 'a'}^${o.stage})`;
}

// Fails if the timeline draws releases as ordinary boxes (no marks), the
// stepper does not name R(…), or the explorer's dtr differs from the CLI's.
test("dtr's releases show in the stepper, as timeline marks and in the chain view", async () => {
  const cli = cliDtr();
  const releases = cli.ops.map((o, i) => [o, i]).filter(([o]) => o.op === 'release');
  assert.ok(releases.length > 0, 'dtr releases at this budget');
  const { page, errors } = await open(context, `#chain=teaching&algorithm=dtr&budget=${BUDGET}`);
  await page.waitForFunction(() => document.querySelector('#stat-makespan')?.textContent.includes('ms'), null, { timeout: 60000 });
  assert.equal(await text(page, '#stat-makespan'), `${(cli.makespan_seconds * 1000).toFixed(2)} ms`);
  assert.equal(await text(page, '#stat-recomputations'), String(cli.recomputations));

  // One mark per release, titled with its op, on the GPU lane.
  const marks = await page.locator('#timeline-svg g.release-mark title').allTextContents();
  assert.deepEqual(marks, releases.map(([o]) => symbol(o)));

  // Step to the first release: the stepper names it and explains it.
  const [first, index] = releases[0];
  await page.locator('#step-first').click();
  for (let i = 0; i < index; i++) await page.locator('#step-next').click();
  const name = await page.locator('#step-explain .opname').getAttribute('data-op');
  assert.equal(name, symbol(first));
  assert.match(await text(page, '#step-explain'), /Release .*: forget it/);

  // The chain view colours a stage whose ā^ℓ is released before B^ℓ as recomputed.
  assert.ok((await page.locator('#chain-svg').innerHTML()).includes('#d55e00'), 'a released stage drawn as recomputed');
  mkdirSync(SHOTS, { recursive: true });
  await page.locator('#step-clear').click();
  await page.locator('#timeline-svg').scrollIntoViewIfNeeded();
  await page.locator('#timeline-svg').locator('xpath=ancestor::section[1]').screenshot({ path: `${SHOTS}/dtr-timeline.png` });
  assert.deepEqual(errors, []);
});

// The max-batch panel searches in the worker with the device-memory card's
// inputs and the example's profiled batch; every bar's batch and throughput
// equal `remat maxbatch … --json` for the same inputs. Fails if the panel
// takes another budget (e.g. forgets the fixed bytes or the margin), scales
// from another batch, or mislabels a bar.
test('the max-batch bars equal remat maxbatch for the same device', async () => {
  const { page, errors } = await open(context, '#chain=resnet50-h100&algorithm=rotor');
  await page.locator('#maxbatch-run').click();
  await page.waitForSelector('#maxbatch-svg g.maxbatch-row', { timeout: 120000 });
  const svg = page.locator('#maxbatch-svg');
  const attr = async (name) => Number(await svg.getAttribute(name));
  const device = {
    memory: await attr('data-memory'), fixed: await attr('data-fixed'),
    margin: await attr('data-margin'), batch: await attr('data-batch'), max: await attr('data-max-batch'),
  };
  // The card's defaults: an 80 GiB GPU, ResNet-50's weights with fp32 Adam
  // (16 bytes a parameter), a 10 % margin; the example was profiled at 32.
  assert.equal(device.memory, 80 * 2 ** 30);
  assert.equal(device.fixed, 25_557_032 * 16);
  assert.equal(device.margin, Math.round(80 * 2 ** 30 * 0.1));
  assert.equal(device.batch, 32);
  const rows = await page.locator('#maxbatch-svg g.maxbatch-row').evaluateAll((gs) => gs.map((g) => ({
    algorithm: g.dataset.algorithm, batch: Number(g.dataset.batch), throughput: Number(g.dataset.throughput),
    text: g.textContent,
  })));
  const cli = JSON.parse(execFileSync(CLI, ['maxbatch', 'example:resnet50-h100', '--memory', String(device.memory),
    '--fixed', String(device.fixed), '--margin', String(device.margin), '--batch', String(device.batch),
    '--max-batch', String(device.max), '-a', rows.map((r) => r.algorithm).join(','), '--json']).toString());
  const want = cli.methods.map((m) => ({ algorithm: m.algorithm, batch: m.batch, throughput: m.samples_per_second }));
  assert.deepEqual(rows.map(({ algorithm, batch, throughput }) => ({ algorithm, batch, throughput })), want);
  assert.deepEqual(rows.map((r) => r.algorithm), ['store-all', 'sequential', 'rotor', 'dtr', 'delta', 'pofo']);
  for (const r of rows) assert.match(r.text, new RegExp(`batch ${r.batch.toLocaleString('en').replace(/,/g, '\u2009')}.* samples/s`));
  assert.match(await text(page, '#maxbatch-caption'), /scaled linearly from the profiled batch/);
  mkdirSync(SHOTS, { recursive: true });
  await page.locator('#maxbatch').screenshot({ path: `${SHOTS}/maxbatch-panel.png` });
  assert.deepEqual(errors, []);
});
