// The Code card (issue 45, item 3): for the plan on screen, the Python to
// paste beside a training script, in three forms, each with its predicted
// peak and time, copied with one click. Its text is remat-core's, so it
// must be `remat export --code`'s for the schedule the page exports, to the
// byte; python/tests/test_export.py pastes that text beside a torchvision
// and a transformers model and measures the predicted peak.
//
// How it could fail: the page writing its code from another schedule than
// the one it exports (another budget, the previous plan), another target
// than the tab names, or a copy that puts other text on the clipboard.
// Mutation run: the transformers tab lowered with Target::Pytorch → the
// transformers comparison fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, open, text } from './helpers.mjs';

const CLI = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

async function exportedSchedule(page) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#export-schedule').click()]);
  const file = join(mkdtempSync(join(tmpdir(), 'remat-code-')), 'schedule.json');
  await download.saveAs(file);
  return file;
}

const cli = (file, to, ...more) => execFileSync(CLI,
  ['export', file, '--to', to, '--chain', 'example:gpt2-cpu-torch', ...more], { encoding: 'utf8' });

async function tab(page, id) {
  await page.locator(`#code-tab-${id}`).click();
  await page.waitForFunction((id) => document.querySelector(`#code-tab-${id}`).getAttribute('aria-selected') === 'true', id);
  return page.locator('#code-text').textContent();
}

test('the Code card writes remat export --code for the plan on screen, and copies it', async () => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const { page, errors } = await open(context, '#chain=gpt2-cpu-torch&algorithm=rotor');
  await page.locator('[data-place="place-chain"]').click();
  await page.locator('#code-card').scrollIntoViewIfNeeded();
  const file = await exportedSchedule(page);

  const pytorch = await tab(page, 'pytorch');
  assert.equal(pytorch, cli(file, 'pytorch', '--code'));
  const plan = JSON.parse(cli(file, 'pytorch', '--json'));
  const regions = plan.forms.find((f) => f.form === 'regions');
  assert.equal(await page.locator('#code-status').getAttribute('data-peak'), String(regions.peak_bytes));
  assert.match(await text(page, '#code-status'), /predicted peak .* step .* ms/);

  const transformers = await tab(page, 'transformers');
  assert.equal(transformers, cli(file, 'transformers', '--code'));
  assert.match(transformers, /apply_plan\(model, PLAN\)/);

  // remat_torch runs the schedule itself: the one the page exports.
  const runtime = await tab(page, 'remat_torch');
  const inlined = JSON.parse(runtime.split('r"""')[1].split('"""')[0]);
  const exported = JSON.parse(readFileSync(file, 'utf8'));
  assert.deepEqual(inlined.ops, exported.ops);
  assert.equal(inlined.budget_bytes, exported.budget_bytes);
  assert.match(runtime, /remat_torch\.checkpointed\(model, SCHEDULE, loss=loss_fn\)/);

  await page.locator('#code-copy').click();
  await page.waitForFunction(() => document.querySelector('#code-copied').textContent === 'copied');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), runtime);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a plan that offloads has no stock form, says why, and still has the remat_torch code', async () => {
  const { page, errors } = await open(context, '#chain=teaching&algorithm=offload-only');
  await page.locator('#code-card').scrollIntoViewIfNeeded();
  const file = await exportedSchedule(page);
  const ops = JSON.parse(readFileSync(file, 'utf8')).ops;
  assert.ok(ops.some((o) => o.op === 'offload'), 'the plan offloads');
  await tab(page, 'pytorch');
  assert.match(await text(page, '#code-status'), /no pytorch form: .*host/);
  assert.ok(await page.locator('#code-copy').isDisabled());
  const runtime = await tab(page, 'remat_torch');
  assert.match(runtime, /remat_torch\.checkpointed/);
  assert.deepEqual(errors, []);
  await page.close();
});
