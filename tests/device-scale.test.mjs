// The device-memory view of the budget, the scaled examples (issue 13,
// points 7 and 8) and a scaled imported chain. Expected numbers are
// computed here from the inputs, from the CLI's copy of each example
// (`remat examples --write`) and from the CLI's M_high of a chain scaled
// by hand, not read back from the page. Run through scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { launch, open, nextPlan, planId, importFile, waitForPlan } from './helpers.mjs';

const CLI = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
const GiB = 2 ** 30;
const VGG19_PARAMETERS = 143667240; // torchvision's count
let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

const deviceBudget = (page) => page.locator('#device-budget').getAttribute('data-bytes').then(Number);
const hashOf = (page) => page.evaluate(() => location.hash);

/// Types `value` into the text box `sel` and commits it (Enter).
async function type(page, sel, value) {
  await page.locator(sel).fill(value);
  await page.locator(sel).press('Enter');
}

// Fails if a term of GPU − weights − gradients − optimizer state − margin
// is dropped or mis-sized (tried: Adam counted with one moment: the first
// expected budget was off by 4 B × 143.7 M), if "Use this budget" does not
// set the slider's budget, or if the link does not hold the inputs (tried:
// `margin` left out of the link: the link never named the 2 GiB margin).
test('device memory: the activation budget a GPU leaves, used as the budget, held by the link', async () => {
  const { page, errors } = await open(context, '#chain=vgg19-h100&algorithm=rotor');
  await page.locator('#device-memory-toggle').check();
  await page.waitForFunction(() => location.hash.includes('gpu='));
  // An 80 GB card, VGG-19's parameters in fp32 with Adam (16 B each), and
  // `remat maxbatch`'s 1 % margin.
  assert.equal(await page.locator('#params-input').inputValue(), String(VGG19_PARAMETERS));
  assert.equal(await page.locator('#margin-input').inputValue(), '1%');
  assert.equal(await deviceBudget(page), 80 * GiB - Math.round(80 * GiB * 0.01) - VGG19_PARAMETERS * 16);
  // SGD with momentum in mixed precision: 2 + 2 + (4 master + 4) = 12 B;
  // a margin of 2 GiB; a 40 GB card.
  await page.selectOption('#optimizer-select', 'momentum');
  await page.selectOption('#weights-select', 'mixed');
  await type(page, '#margin-input', '2 GiB');
  await page.selectOption('#gpu-preset', String(40 * GiB));
  const expected = 40 * GiB - 2 * GiB - VGG19_PARAMETERS * 12;
  await page.waitForFunction((e) => Number(document.querySelector('#device-budget')?.dataset.bytes) === e, expected);
  assert.match(await page.locator('#device-memory-card').innerText(), /activations only/);
  // The budget: above M_high here (VGG-19 at batch 32 keeps everything).
  const id = await planId(page);
  await page.locator('#use-device-budget').click();
  await page.waitForFunction((e) => location.hash.includes(`budget=${e}`), expected);
  await nextPlan(page, id);
  assert.equal(await page.locator('#stat-recomputations').innerText(), '0');
  assert.match(await page.locator('#device-verdict').innerText(), /M_high/);
  // The link holds the inputs: a fresh page shows the same view.
  await page.waitForFunction(() => location.hash.includes('margin=2147483648'));
  const link = await hashOf(page);
  assert.match(link, /gpu=42949672960&params=143667240&weights=mixed&optimizer=momentum&margin=2147483648/);
  const again = await open(context, link);
  assert.equal(await deviceBudget(again.page), expected);
  assert.equal(await again.page.locator('#optimizer-select').inputValue(), 'momentum');
  assert.equal(await again.page.locator('#budget-input').inputValue(), await page.locator('#budget-input').inputValue());
  // An entered model state bigger than the card: no budget, and it says so.
  await again.page.selectOption('#model-state-mode', 'entered');
  await again.page.waitForFunction((b) => location.hash.includes(`state=${b}`), VGG19_PARAMETERS * 12);
  assert.equal(await deviceBudget(again.page), expected);
  await type(again.page, '#state-input', '39 GiB');
  await again.page.waitForSelector('#device-budget-error');
  await again.page.waitForFunction((b) => location.hash.includes(`state=${b}`), 39 * GiB);
  assert.match(await again.page.locator('#device-budget-error').innerText(), /exceed the GPU memory by 1\.00 GiB/);
  assert.equal(await again.page.locator('#use-device-budget').isDisabled(), true);
  // A bad size names its field.
  await type(again.page, '#gpu-input', 'lots');
  assert.match(await again.page.locator('#device-memory-card .err').first().innerText(), /^GPU memory:/);
  // Back: the same total entered; Back again: counted from the parameters.
  await again.page.goBack();
  await again.page.waitForFunction((b) => location.hash.includes(`state=${b}`), VGG19_PARAMETERS * 12);
  await again.page.waitForSelector('#device-budget');
  assert.equal(await deviceBudget(again.page), expected);
  await again.page.goBack();
  await again.page.waitForFunction(() => !location.hash.includes('state=') && location.hash.includes('params='));
  await again.page.waitForSelector('#optimizer-select');
  assert.equal(await again.page.locator('#optimizer-select').inputValue(), 'momentum');
  // Closing the view takes it out of the link.
  await page.locator('#device-memory-toggle').uncheck();
  await page.waitForFunction(() => !location.hash.includes('gpu='));
  assert.deepEqual(errors, []);
  assert.deepEqual(again.errors, []);
  await again.page.close();
  await page.close();
});

/// The example as the CLI writes it, with sizes × `bytes` and times × `seconds`.
function scaledByHand(name, bytes, seconds) {
  return scaledDoc(JSON.parse(execFileSync(CLI, ['examples', '--write', name], { encoding: 'utf8' })), bytes, seconds);
}

/// A copy of the remat-chain/1 document `doc`, sizes × `bytes` (rounded), times × `seconds`.
function scaledDoc(doc, bytes, seconds) {
  const c = structuredClone(doc);
  const size = (x) => Math.round(x * bytes);
  c.input_bytes = size(c.input_bytes);
  c.input_gradient_bytes = size(c.input_gradient_bytes ?? 0);
  for (const s of c.stages) {
    for (const k of ['output_bytes', 'saved_bytes', 'gradient_bytes', 'forward_overhead_bytes', 'backward_overhead_bytes']) {
      if (s[k] !== undefined) s[k] = size(s[k]);
    }
    for (const k of ['forward_seconds', 'backward_seconds', 'forward_nograd_seconds']) {
      if (s[k] !== undefined && s[k] !== null) s[k] *= seconds;
    }
  }
  return c;
}

async function exportedChain(page) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('#export-chain').click()]);
  const file = join(mkdtempSync(join(tmpdir(), 'remat-scale-')), 'chain.json');
  await dl.saveAs(file);
  return JSON.parse(readFileSync(file, 'utf8'));
}

/// Every size equal and every time within `rel` relative (0: equal).
function assertSameChain(got, want, rel = 1e-9) {
  assert.equal(got.stages.length, want.stages.length);
  assert.equal(got.input_bytes, want.input_bytes);
  got.stages.forEach((s, i) => {
    const w = want.stages[i];
    for (const k of ['output_bytes', 'saved_bytes', 'gradient_bytes']) assert.equal(s[k], w[k], `stage ${i} ${k}`);
    for (const k of ['forward_overhead_bytes', 'backward_overhead_bytes']) assert.equal(s[k] ?? 0, w[k] ?? 0, `stage ${i} ${k}`);
    for (const k of ['forward_seconds', 'backward_seconds']) {
      assert.ok(Math.abs(s[k] - w[k]) <= rel * Math.abs(w[k]), `stage ${i} ${k}: ${s[k]} vs ${w[k]}`);
    }
  });
}

// Fails if a control does not rescale the chain by the linear rule (tried:
// Scale::batch(to, from) in scaling.rs: the batch-8 export came out halved),
// if the link does not hold the scale or Back does not restore it (tried:
// apply_url comparing the chain name only: after Back the page still
// showed bf16). Each mutation was built and run on its own page build.
test('scaled examples: batch, sequence and precision rescale linearly; the link and Back hold them', async () => {
  const { page, errors } = await open(context, '#chain=gpt2-h100-math&algorithm=rotor');
  assert.match(await page.locator('#scale-profiled').innerText(), /batch 4, sequence 1024, fp32/);
  assert.match(await page.locator('#scale-rule').innerText(), /Linear in the batch/);
  assert.match(await page.locator('#scale-rule').innerText(), /square/);
  let id = await planId(page);
  await page.locator('#batch-input').fill('8');
  await page.locator('#batch-input').press('Enter');
  await page.waitForFunction(() => location.hash.includes('batch=8'));
  await nextPlan(page, id);
  assert.match(await page.locator('.chain-about').innerText(), /batch 8 \(profiled 4\)/);
  assertSameChain(await exportedChain(page), scaledByHand('gpt2-h100-math', 2, 2));
  // Sequence 2048 and bf16 on top: sizes × 2 × 2 × ½, times × 4.
  await page.locator('#seq-input').fill('2048');
  await page.locator('#seq-input').press('Enter');
  await page.waitForFunction(() => location.hash.includes('seq=2048'));
  id = await planId(page);
  await page.selectOption('#precision-select', 'bf16');
  await page.waitForFunction(() => location.hash.includes('precision=bf16'));
  await nextPlan(page, id);
  assertSameChain(await exportedChain(page), scaledByHand('gpt2-h100-math', 2, 4));
  // Back: batch 8, sequence 2048, fp32 again; Back twice: batch 8 only.
  await page.goBack();
  await page.waitForFunction(() => !location.hash.includes('precision='));
  await page.waitForFunction(() => document.querySelector('#precision-select').value === 'fp32');
  await page.goBack();
  await page.waitForFunction(() => !location.hash.includes('seq='));
  await page.waitForFunction(() => document.querySelector('#seq-input').value === '1024');
  assert.equal(await page.locator('#batch-input').inputValue(), '8');
  // A link: an image model at batch 64 (no sequence control there).
  const link = await open(context, '#chain=vgg19-h100&algorithm=rotor&batch=64');
  assert.equal(await link.page.locator('#seq-input').count(), 0);
  assert.equal(await link.page.locator('#batch-input').inputValue(), '64');
  assertSameChain(await exportedChain(link.page), scaledByHand('vgg19-h100', 2, 2));
  // "As profiled" drops the scale from the view and the link.
  await link.page.locator('#scale-reset').click();
  await link.page.waitForFunction(() => !location.hash.includes('batch='));
  assert.equal(await link.page.locator('#batch-input').inputValue(), '32');
  // A batch that cannot apply names the control; the chain stays.
  await link.page.locator('#batch-input').fill('0');
  await link.page.locator('#batch-input').press('Enter');
  assert.match(await link.page.locator('#scale-controls .err').innerText(), /^batch:/);
  assert.deepEqual(errors, []);
  assert.deepEqual(link.errors, []);
  await link.page.close();
  await page.close();
});

/// M_high of `doc` as the CLI computes it (store-all at 100 %).
function cliMHigh(doc) {
  const file = join(mkdtempSync(join(tmpdir(), 'remat-mhigh-')), 'chain.json');
  writeFileSync(file, JSON.stringify(doc));
  const out = JSON.parse(execFileSync(CLI, ['solve', file, '-a', 'store-all', '-b', '100%', '--json'], { encoding: 'utf8' }));
  return out.m_high_bytes;
}

const about = (page) => page.locator('.chain-about strong').innerText();
const scaleError = (page) => page.locator('#scale-controls .err').innerText();

// Fails if an imported chain is not rescaled by the linear rule from the
// batch the user says it was profiled at, if the page's M_high is not the
// CLI's for the chain scaled by hand, if the link or a reload drops the
// stated profile or the scale, if Back does not walk them, or if a rescale
// starts from the chain on screen rather than the file as imported.
// Mutation tried (own page build): `rescale_imported` taking the chain on
// screen as its original: the bf16 export came out with input_bytes
// 67108864 instead of 33554432 (the doubled chain × 1, not the file × 1).
test('an imported chain: profiled at batch 32, run at 64 and in bf16; the link, a reload and Back hold it; As profiled restores it', async () => {
  const { page, errors } = await open(context, '#chain=teaching&algorithm=rotor');
  const six = JSON.parse(readFileSync(new URL('./fixtures/six-stages.json', import.meta.url), 'utf8'));
  await importFile(page, 'six.json', six);
  await page.waitForFunction(() => location.hash.includes('chain=imported'));
  await waitForPlan(page);
  assert.equal(await about(page), 'six stages');
  // The card asks what the file was profiled at: batch 1, fp32 until told.
  assert.match(await page.locator('#scale-controls').innerText(), /Scale the imported chain/);
  assert.match(await page.locator('#scale-profiled').innerText(), /records neither its batch nor its precision/);
  assert.equal(await page.locator('#profiled-batch-input').inputValue(), '1');
  assert.equal(await page.locator('#profiled-precision-select').inputValue(), 'fp32');
  assert.equal(await page.locator('#scale-reset').count(), 0);
  // Profiled at 32: the chain as imported, the batch box follows.
  await type(page, '#profiled-batch-input', '32');
  await page.waitForFunction(() => location.hash.includes('profiled-batch=32'));
  assert.equal(await page.locator('#batch-input').inputValue(), '32');
  assertSameChain(await exportedChain(page), six, 0);
  // Batch 64: every size and time × 2; M_high is the CLI's for that chain.
  let id = await planId(page);
  await type(page, '#batch-input', '64');
  await page.waitForFunction(() => location.hash.includes('&batch=64'));
  await nextPlan(page, id);
  assert.equal(await about(page), 'six stages · batch 64 (profiled 32) (scaled linearly)');
  const doubled = scaledDoc(six, 2, 2);
  assertSameChain(await exportedChain(page), doubled, 0);
  const mHigh = cliMHigh(doubled);
  assert.equal(mHigh, 2 * cliMHigh(six));
  await page.locator('#budget-slider').focus();
  await page.keyboard.press('End');
  await page.waitForFunction((m) => location.hash.includes(`budget=${m}&`), mHigh);
  // A reload: the chain from the browser's storage, its scale from the link.
  await page.reload();
  await waitForPlan(page);
  assert.equal(await about(page), 'six stages · batch 64 (profiled 32) (scaled linearly)');
  assert.equal(await page.locator('#profiled-batch-input').inputValue(), '32');
  assert.equal(await page.locator('#batch-input').inputValue(), '64');
  assertSameChain(await exportedChain(page), doubled, 0);
  // bf16 on top: sizes × 2 × ½, times × 2.
  id = await planId(page);
  await page.selectOption('#precision-select', 'bf16');
  await page.waitForFunction(() => location.hash.includes('&precision=bf16'));
  await nextPlan(page, id);
  assert.match(await about(page), /batch 64 \(profiled 32\), bf16 \(profiled fp32\) \(scaled linearly\)$/);
  assertSameChain(await exportedChain(page), scaledDoc(six, 1, 2), 0);
  // Back: fp32 at batch 64, the budget at M_high.
  await page.goBack();
  await page.waitForFunction(() => !location.hash.includes('&precision='));
  await page.waitForFunction(() => document.querySelector('#precision-select').value === 'fp32');
  assertSameChain(await exportedChain(page), doubled, 0);
  assert.match(await hashOf(page), new RegExp(`budget=${mHigh}&`));
  // Back: the budget before End (half-way); Back again: batch 32 as
  // profiled, the file as imported.
  await page.goBack();
  await page.waitForFunction((m) => !location.hash.includes(`budget=${m}&`) && location.hash.includes('&batch=64'), mHigh);
  await page.goBack();
  await page.waitForFunction(() => !location.hash.includes('&batch=') && location.hash.includes('profiled-batch=32'));
  await page.waitForFunction(() => document.querySelector('#batch-input').value === '32');
  assert.equal(await about(page), 'six stages');
  assertSameChain(await exportedChain(page), six, 0);
  // 32 → 64 → 32 typed: the original exactly, name included.
  await type(page, '#batch-input', '64');
  await page.waitForFunction(() => location.hash.includes('&batch=64'));
  await type(page, '#batch-input', '32');
  await page.waitForFunction(() => !location.hash.includes('&batch='));
  assert.equal(await about(page), 'six stages');
  assertSameChain(await exportedChain(page), six, 0);
  // "As profiled": the file as imported; the stated profile stays.
  await type(page, '#batch-input', '128');
  await page.waitForFunction(() => location.hash.includes('&batch=128'));
  await page.locator('#scale-reset').click();
  await page.waitForFunction(() => !location.hash.includes('&batch='));
  assert.equal(await about(page), 'six stages');
  assertSameChain(await exportedChain(page), six, 0);
  assert.equal(await page.locator('#profiled-batch-input').inputValue(), '32');
  // Bad input names the control; the chain and the link stay.
  const before = await hashOf(page);
  await type(page, '#batch-input', '0');
  assert.match(await scaleError(page), /^batch: "0" is not a whole number from 1 to 65536/);
  await type(page, '#profiled-batch-input', '70000');
  assert.match(await scaleError(page), /^profiled at batch: "70000"/);
  await type(page, '#batch-input', '65537');
  assert.match(await scaleError(page), /^batch: "65537"/);
  assert.equal(await about(page), 'six stages');
  assert.equal(await hashOf(page), before);
  // The card, with its error shown: no serious or critical axe violation
  // (every box and picker labelled, the text legible).
  await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
  const axe = await page.evaluate(async () => (await window.axe.run('#scale-controls', { resultTypes: ['violations'] }))
    .violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help}`));
  assert.deepEqual(axe, []);
  // A link whose scale cannot apply: the file as imported, and why.
  const bad = await open(context, '#chain=imported&algorithm=rotor&batch=70000&profiled-batch=32');
  assert.match(await bad.page.locator('#notice').innerText(), /The link's scale: batch: 70000 is outside 1 to 65536; showing the imported chain as imported/);
  assert.equal(await about(bad.page), 'six stages');
  assert.deepEqual(errors, []);
  assert.deepEqual(bad.errors, []);
  await bad.page.close();
  await page.close();
});

// Fails if the page's wasm is built without SIMD128, which leaves the
// core's two-lane rotor kernel (relax_simd128) out: against main's build
// (no +simd128) it failed, no f64x2 op in the worker.
test('the worker is built with SIMD128 (the rotor kernel is compiled in)', async () => {
  const dis = new URL('../.tools/node_modules/.bin/wasm-dis', import.meta.url).pathname;
  const res = await fetch(new URL('worker_bg.wasm', process.env.EXPLORER_URL ?? 'http://127.0.0.1:8080/'));
  assert.equal(res.status, 200);
  const file = join(mkdtempSync(join(tmpdir(), 'remat-wasm-')), 'worker_bg.wasm');
  (await import('node:fs')).writeFileSync(file, Buffer.from(await res.arrayBuffer()));
  const text = execFileSync(dis, [file], { encoding: 'utf8', maxBuffer: 1 << 28 });
  assert.match(text, /f64x2\.(add|pmin)/, 'the relaxation kernel (f64x2.add, f64x2.pmin)');
});
