// Why this much, and why again: the memory card names the tensors at the
// peak, and the step-through says which time a forward runs and for which
// backward (issue 27, points 5 and 6). Both equal what the CLI says of the
// same schedule. Run through scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, open, waitForPlan } from './helpers.mjs';

const CLI = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'remat-why-'));
let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

/** `remat solve` of `example:chain` at `budget` (bytes or a percentage):
 * its JSON report, its text, and the schedule file it wrote. */
function solve(chain, algorithm, budget) {
  const out = join(dir, `${chain}.${algorithm}.json`);
  const args = ['solve', `example:${chain}`, '-a', algorithm, '-b', budget];
  const report = JSON.parse(execFileSync(CLI, [...args, '--json'], { encoding: 'utf8' }));
  const lines = execFileSync(CLI, [...args, '-o', out], { encoding: 'utf8' }).split('\n');
  return { report, lines, out };
}

test('the memory card says where the peak comes from, as `remat solve` does', async () => {
  // Could fail if the page named the tensors of another schedule than the
  // one drawn, or did not name a workspace by its operation (the core's
  // sum and order are checked natively: tests/properties.rs, cli.rs).
  // Mutation tried: the page's line built with no ops (`peak_line(&[])`):
  // fails on the first chain ("at the start: …, workspace of op 47" where
  // the CLI says "during B^5: …, workspace of B^5").
  for (const [chain, algorithm, share] of [
    ['vgg19-h100', 'rotor', '75%'],
    ['gpt2-h100-math', 'sequential', '60%'],
    ['teaching', 'recompute-all', '100%'],
  ]) {
    const cli = solve(chain, algorithm, share);
    const budget = cli.report.budget_bytes;
    const { page, errors } = await open(context, `#chain=${chain}&algorithm=${algorithm}&budget=${budget}`);
    await waitForPlan(page);
    const peak = cli.lines.find((l) => l.startsWith('peak ')).replace(/^peak\s+/, '');
    const why = cli.lines.find((l) => l.startsWith('at peak ')).replace(/^at peak\s+/, '');
    const line = await page.locator('#peak-why').getAttribute('data-line');
    assert.equal(line, `Peak ${peak} ${why}`, chain);
    // On screen, the papers' notation with superscripts.
    const shown = await page.locator('#peak-why').innerText();
    assert.ok(shown.startsWith(`Peak ${peak} during`), shown);
    assert.deepEqual(errors, []);
    await page.close();
  }
});

test('each step says what the operation does, and a recomputation which time and for which backward', async () => {
  // Could fail if the page kept the plain caption of a first forward for
  // every forward (it did: "F_all^8: compute stage 8 and keep everything
  // its backward needs" twice), counted runs per op kind instead of per
  // stage, or named the wrong backward. Compared op by op with `remat
  // simulate --states --json`'s captions of the same schedule. Mutation
  // tried: the page's captions as `Op::explain` alone (fails at the first
  // recomputed F_all^9).
  const cli = solve('teaching', 'rotor', '40%');
  const states = JSON.parse(execFileSync(CLI, ['simulate', 'example:teaching', cli.out, '--states', '--json'], { encoding: 'utf8' })).states;
  const { page, errors } = await open(context, `#chain=teaching&algorithm=rotor&budget=${cli.report.budget_bytes}`);
  await waitForPlan(page);
  const ops = cli.report.ops.length;
  assert.equal(states.length, ops);
  let recomputed = 0;
  for (let i = 0; i < ops; i++) {
    await page.locator('#step-next').click();
    await page.waitForFunction((i) => document.querySelector('#step-explain .opname')?.textContent.startsWith(`op ${i + 1} /`), i);
    const caption = await page.locator('#step-explain .step-caption').getAttribute('data-caption');
    assert.equal(caption, states[i].caption, `op ${i}`);
    if (/recomputed \(2nd time\) for B\^\d+/.test(caption)) recomputed += 1;
  }
  assert.ok(recomputed > 0, 'rotor at 40 % recomputes on the teaching chain');
  assert.deepEqual(errors, []);
  await page.close();
});
