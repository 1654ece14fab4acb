// Strategies side by side in the Learn place (issue 27, point 2): the
// classic four on the chain on the page, each the schedule `remat solve`
// gives, on one memory axis. Run through scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, open, waitForPlan } from './helpers.mjs';

const CLI = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

const solve = (chain, args) => JSON.parse(execFileSync(CLI, ['solve', `example:${chain}`, ...args, '--json'], { encoding: 'utf8' }));

test('the classic four side by side: the peaks and times `remat solve` gives, on one memory axis', async () => {
  // Could fail if √n were sequential's best k rather than ⌈√L⌉ segments
  // (its peak would be M_high at an unlimited budget), if a strategy were
  // drawn from the plan on screen instead of its own schedule, if rotor
  // ignored the page's budget, or if each chart scaled its memory axis to
  // its own peak (the tick labels differ). Mutation tried: `shared_top`
  // left out of the charts: the tick labels of recompute-all's chart
  // differ from store-all's.
  const chain = 'vgg19-h100';
  const budget = solve(chain, ['-a', 'rotor', '-b', '80%']).budget_bytes;
  const { page, errors } = await open(context, `#chain=${chain}&algorithm=rotor&budget=${budget}`);
  await waitForPlan(page);
  await page.locator('#classic-four').click();
  await page.locator('.side-row').nth(3).waitFor();
  const rows = await page.locator('.side-row').evaluateAll((rs) => rs.map((r) => ({
    id: r.id, peak: Number(r.dataset.peak), seconds: Number(r.dataset.seconds), segments: r.dataset.segments,
    heading: r.querySelector('h3').textContent,
    ticks: [...r.querySelectorAll('svg text')].filter((t) => t.getAttribute('x') === '70.0').map((t) => t.textContent),
  })));
  assert.deepEqual(rows.map((r) => r.id), ['side-store-all', 'side-recompute-all', 'side-sequential', 'side-rotor']);
  // VGG-19 has 24 stages: √n is 5 segments.
  assert.equal(rows[2].segments, '5');
  const want = [
    solve(chain, ['-a', 'store-all', '-b', '100%']),
    solve(chain, ['-a', 'recompute-all', '-b', '100%']),
    solve(chain, ['-a', 'sequential', '--segments', '5', '-b', '100%']),
    solve(chain, ['-a', 'rotor', '-b', String(budget)]),
  ];
  for (const [i, r] of rows.entries()) {
    assert.equal(r.peak, want[i].peak_bytes, r.id);
    assert.ok(Math.abs(r.seconds - want[i].makespan_seconds) <= 1e-12 * want[i].makespan_seconds, `${r.id}: ${r.seconds} vs ${want[i].makespan_seconds}`);
  }
  // Store-all does not fit 80 % of its own peak; rotor does.
  assert.match(rows[0].heading, /over the budget/);
  assert.match(rows[3].heading, /fits the budget/);
  // One memory axis: the same tick labels on every chart.
  assert.ok(rows[0].ticks.length >= 3, rows[0].ticks.join(' '));
  for (const r of rows) assert.deepEqual(r.ticks, rows[0].ticks, r.id);
  // The budget follows the page: a lower one re-solves rotor only.
  const low = solve(chain, ['-a', 'rotor', '-b', '72%']).budget_bytes;
  await page.locator('#budget-input').fill(String(low));
  await page.locator('#budget-input').press('Enter');
  await page.waitForFunction((p) => document.querySelector('#side-rotor').dataset.peak !== String(p), rows[3].peak);
  const rotor = await page.locator('#side-rotor').getAttribute('data-peak');
  assert.equal(Number(rotor), solve(chain, ['-a', 'rotor', '-b', String(low)]).peak_bytes);
  for (const size of [[1366, 768], [1920, 1080]]) {
    await page.setViewportSize({ width: size[0], height: size[1] });
    await page.locator('#side-by-side').scrollIntoViewIfNeeded();
    const shot = join(tmpdir(), `remat-side-by-side-${size[0]}.png`);
    await page.locator('#side-by-side').screenshot({ path: shot });
    console.log(`screenshot: ${shot}`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});
