// A measured run (remat-run/1) over the memory curve: imported for the plan
// it was measured for, it is drawn with a summary; for another plan the page
// names the plan it belongs to; a bad file names its field and changes
// nothing. The fixture is rotor at 30 MB on example:gpt2-cpu-torch, the
// simulator's prediction perturbed (peaks + 5 %); src/measurement/tests.rs
// holds it to the page's own plan.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { launch, open, nextPlan, planId, text } from './helpers.mjs';

const RUN = JSON.parse(readFileSync(new URL('./fixtures/run-gpt2-cpu-torch-rotor-30MB.json', import.meta.url), 'utf8'));
const PLAN = '#chain=gpt2-cpu-torch&algorithm=rotor&budget=30000000';
const SUMMARY = 'peak predicted 23.8 MiB, measured 25.0 MiB (+5.0 %)';

let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

/// Imports `doc` as `name` through the **Import measured run…** button's input.
function importRun(page, name, doc) {
  return page.locator('#import-run-input').setInputFiles({
    name, mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(doc)),
  });
}

/// The number of points of the measured line drawn over the memory chart.
function measuredPoints(page) {
  return page.evaluate(() => {
    const p = document.querySelector('#memory-svg .measured-line');
    return p ? (p.getAttribute('d').match(/[ML]/g) || []).length : 0;
  });
}

test('a run imported for the plan on screen is drawn over the memory curve with its summary', async () => {
  const { page, errors } = await open(context, PLAN);
  assert.equal(await page.locator('#import-run-button').innerText(), 'Import measured run…');
  // The button opens the file chooser; its input itself is not shown.
  const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.locator('#import-run-button').click()]);
  assert.equal(await chooser.element().getAttribute('id'), 'import-run-input');
  assert.equal(await page.locator('#import-run-input').isVisible(), false);
  await importRun(page, 'run.json', RUN);
  await page.locator('#measured-summary').waitFor();
  const summary = await text(page, '#measured-summary');
  assert.ok(summary.includes(`Measured run run.json: ${SUMMARY}`), summary);
  assert.match(summary, /step predicted 135\.24 ms, measured 134\.50 ms \(−0\.5 %\)/);
  assert.match(await text(page, '#notice'), /Imported run\.json: 15 measured ops, drawn over the memory curve/);
  // Both lines, and their legend.
  assert.ok(await measuredPoints(page) >= 15 * 3, 'one step per operation');
  assert.equal(await page.locator('#memory-svg .predicted-line').count(), 1);
  const legend = await text(page, '#measured-legend');
  assert.match(legend, /predicted/);
  assert.match(legend, /measured/);
  // The saved figure draws both lines and names them in its legend.
  await page.locator('#save-memory summary').click();
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('#export-memory-svg').click()]);
  const saved = readFileSync(await dl.path(), 'utf8');
  assert.ok(saved.includes('class="measured-line"'), 'the lines are in the saved figure');
  assert.match(saved, />measured</);
  assert.match(saved, />predicted</);
  // The tooltip reads both sides of the operation under the pointer.
  await page.locator('#memory-svg').scrollIntoViewIfNeeded();
  const box = await page.locator('#memory-svg').boundingBox();
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height * 0.5);
  await page.locator('.tooltip .measured-at').waitFor();
  assert.match(await text(page, '.tooltip .measured-at'), /measured, .* predicted; after/);

  // Another budget is another plan: the page says which plan the run is for.
  const id = await planId(page);
  await page.locator('#budget-input').fill('20000000');
  await page.locator('#budget-input').press('Enter');
  await nextPlan(page, id);
  await page.locator('#measured-mismatch').waitFor();
  assert.match(await text(page, '#measured-mismatch'),
    /Measured run run\.json is not drawn: this run was measured for rotor at 28\.6 MiB; pick that plan/);
  assert.equal(await measuredPoints(page), 0);
  assert.equal(await page.locator('#measured-legend').count(), 0);
  // Back to its plan: drawn again.
  const id2 = await planId(page);
  await page.locator('#budget-input').fill('30000000');
  await page.locator('#budget-input').press('Enter');
  await nextPlan(page, id2);
  await page.locator('#measured-summary').waitFor();
  assert.ok(await measuredPoints(page) > 0);
  // Removed, it is gone.
  await page.locator('#measured-remove').click();
  assert.equal(await page.locator('#measured-summary').count(), 0);
  assert.equal(await measuredPoints(page), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a run for another plan says which, and is drawn once that plan is picked', async () => {
  const { page, errors } = await open(context, '#chain=gpt2-cpu-torch&algorithm=rotor&budget=20000000');
  // Through the chain/schedule import too: a run file is recognised.
  await page.locator('#import-input').setInputFiles({
    name: 'measured.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(RUN)),
  });
  await page.locator('#measured-mismatch').waitFor();
  assert.match(await text(page, '#notice'),
    /Imported measured\.json, not drawn: this run was measured for rotor at 28\.6 MiB; pick that plan \(the plan on screen differs: ops\[2\]: the run has forward_all 3, the schedule forward_checkpoint 3\)/);
  const id = await planId(page);
  await page.locator('#budget-input').fill('30000000');
  await page.locator('#budget-input').press('Enter');
  await nextPlan(page, id);
  await page.locator('#measured-summary').waitFor();
  assert.ok((await text(page, '#measured-summary')).includes(SUMMARY));
  // Another chain: the digest says the run is not its.
  await page.locator('#chain-select').selectOption('teaching');
  await page.locator('#measured-mismatch').waitFor();
  assert.match(await text(page, '#measured-mismatch'), /chain_digest: this run was measured for chain "GPT-2.*; load that chain/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a malformed run file shows the named error and loses nothing loaded', async () => {
  const { page, errors } = await open(context, PLAN);
  await importRun(page, 'run.json', RUN);
  await page.locator('#measured-summary').waitFor();
  const before = {
    chain: await text(page, '.chain-about'),
    peak: await text(page, '#stat-peak'),
    summary: await text(page, '#measured-summary'),
    points: await measuredPoints(page),
  };
  const bad = structuredClone(RUN);
  bad.ops[3].peak_bytes = 1;
  await importRun(page, 'bad-run.json', bad);
  await page.waitForFunction(() => /bad-run/.test(document.querySelector('#notice')?.textContent ?? ''));
  assert.match(await text(page, '#notice'),
    /Could not import bad-run\.json: ops\[3\]\.peak_bytes: smaller than memory_bytes \(1 < \d+\): the peak during an operation is at least what it leaves\. Nothing loaded changes\./);
  const typo = structuredClone(RUN);
  typo.ops[0].second = 1;
  await importRun(page, 'typo.json', typo);
  await page.waitForFunction(() => /typo/.test(document.querySelector('#notice')?.textContent ?? ''));
  assert.match(await text(page, '#notice'), /typo\.json: ops\[0\]\.second: unknown field; did you mean `seconds`\?/);
  // A chain given to the run button is named by its format.
  await importRun(page, 'chain.json', { format: 'remat-chain/1', input_bytes: 1, stages: [] });
  await page.waitForFunction(() => /chain\.json/.test(document.querySelector('#notice')?.textContent ?? ''));
  assert.match(await text(page, '#notice'), /format: expected "remat-run\/1", found "remat-chain\/1"/);
  assert.deepEqual({
    chain: await text(page, '.chain-about'),
    peak: await text(page, '#stat-peak'),
    summary: await text(page, '#measured-summary'),
    points: await measuredPoints(page),
  }, before);
  assert.deepEqual(errors, []);
  await page.close();
});

// Issue 45, item 4: a PyTorch CUDA memory snapshot (the pickle
// torch.cuda.memory._dump_snapshot writes) laid over the plan on screen.
// The fixture is written by scripts/snapshot_fixture.py with PyTorch's
// snapshot structure, replaying rotor at 60 % on the teaching chain (blocks
// rounded up to 512 B, a clock 1.25× faster). Could fail if a pickle were
// read as text (a JSON error), if the recording were not scaled onto the
// step (the measured step would not be 0.8 × the predicted one), or if a
// bad snapshot replaced the one drawn. Mutation run: `read_file` reading
// every file as text again (no pickle check) → no summary came (the
// pickle read as a broken JSON file) and this failed.
const SNAPSHOT = readFileSync(new URL('./fixtures/teaching-rotor-60.snapshot.pickle', import.meta.url));
const SNAPSHOT_SCHEDULE = JSON.parse(readFileSync(new URL('./fixtures/teaching-rotor-60.schedule.json', import.meta.url), 'utf8'));

test('a CUDA memory snapshot of the step is laid over the plan on screen', async () => {
  const { page, errors } = await open(context, `#chain=teaching&algorithm=rotor&budget=${SNAPSHOT_SCHEDULE.budget_bytes}`);
  await page.locator('#import-run-input').setInputFiles({
    name: 'step.pickle', mimeType: 'application/octet-stream', buffer: SNAPSHOT,
  });
  await page.locator('#measured-summary').waitFor();
  const summary = await text(page, '#measured-summary');
  assert.match(summary, /Measured run step\.pickle: peak predicted 832 MiB, measured 832 MiB \(\+0\.0 %\)/, summary);
  assert.match(summary, /step predicted 350\.00 ms, measured 280\.00 ms \(−20\.0 %\)/, summary);
  assert.match(await text(page, '#notice'), /Imported step\.pickle: a CUDA memory snapshot laid over the plan on screen/);
  assert.ok(await measuredPoints(page) >= SNAPSHOT_SCHEDULE.ops.length * 2, 'a step per operation');
  // Through the header's Import, a cut snapshot is refused by name and
  // the one drawn stays.
  await page.locator('#import-input').setInputFiles({
    name: 'cut.pickle', mimeType: 'application/octet-stream', buffer: SNAPSHOT.subarray(0, SNAPSHOT.length / 2),
  });
  await page.waitForFunction(() => document.querySelector('#notice')?.textContent.includes('cut.pickle'));
  assert.match(await text(page, '#notice'), /Could not import cut\.pickle: .*unreadable pickle.* Nothing loaded changes\./);
  assert.equal(await text(page, '#measured-summary'), summary);
  assert.deepEqual(errors, []);
  await page.close();
});

