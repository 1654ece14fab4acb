// Strategies side by side in the Learn place (issue 27, point 2): the
// classic four on the chain on the page, each the schedule `remat solve`
// gives, on one memory axis. Run through scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, open, waitForPlan, text } from './helpers.mjs';

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

test('the race: the strategies on one clock and one time axis, with the exact optimum on a short chain', async () => {
  // Could fail if each chart kept its own time axis (store-all's step,
  // 300 ms, would fill its chart as recompute-all's does: the time tick
  // labels differ, and the cursors part ways), if the race's clock moved
  // one chart and not the others, or if the optimum joined at another
  // budget than rotor's (`end: None` in the rows' axes would give
  // store-all's chart other tick labels than recompute-all's).
  const chain = 'teaching';
  const budget = 600000000;
  const { page, errors } = await open(context, `#chain=${chain}&algorithm=rotor&budget=${budget}`);
  await waitForPlan(page);
  await page.locator('#classic-four').click();
  await page.locator('.side-row').nth(4).waitFor();
  const ids = await page.locator('.side-row').evaluateAll((rs) => rs.map((r) => r.id));
  assert.deepEqual(ids, ['side-store-all', 'side-recompute-all', 'side-sequential', 'side-rotor', 'side-optimal']);
  const optimal = solve(chain, ['-a', 'optimal', '-b', String(budget)]);
  assert.equal(Number(await page.locator('#side-optimal').getAttribute('data-peak')), optimal.peak_bytes);
  const seconds = Number(await page.locator('#side-optimal').getAttribute('data-seconds'));
  assert.ok(Math.abs(seconds - optimal.makespan_seconds) <= 1e-12 * optimal.makespan_seconds);
  // One time axis: the same time tick labels under every chart.
  const timeTicks = () => page.locator('.side-row svg[id^="side-memory"]').evaluateAll((svgs) => svgs.map((s) =>
    [...s.querySelectorAll('text')].map((t) => t.textContent).filter((t) => /^[\d.,]+ (ms|s)$/.test(t))));
  const ticks = await timeTicks();
  assert.ok(ticks[0].length >= 3, ticks[0].join(' '));
  for (const t of ticks) assert.deepEqual(t, ticks[0]);
  // Each its own time axis (issue 45): recompute-all's long step no longer
  // squeezes the others; store-all's ticks end near its own 300 ms. Fails
  // if the button left the shared axis (mutation run: `end` kept shared
  // whatever the button: the ticks stayed equal and this failed).
  await page.locator('#side-own-time').click();
  assert.equal(await page.locator('#side-own-time').getAttribute('aria-pressed'), 'true');
  const own = await timeTicks();
  assert.notDeepEqual(own[0], own[1], `${own[0]} | ${own[1]}`);
  const last = (t) => Number(t.at(-1).replace(/[^\d.]/g, '')) * (t.at(-1).endsWith(' s') ? 1000 : 1);
  assert.ok(last(own[0]) <= 300 && last(own[0]) >= 150, own[0].join(' '));
  assert.match(await text(page, '#side-by-side .hint'), /each chart on its own time axis/);
  await page.locator('#side-own-time').click();
  assert.deepEqual(await timeTicks(), ticks);
  // Race them: one cursor, at the same x on every chart at any instant.
  await page.locator('#side-race').click();
  await page.waitForFunction(() => [...document.querySelectorAll('.side-now')].some((p) => p.textContent.startsWith('done at')), null, { timeout: 15000 });
  const now = await page.evaluate(() => ({
    xs: [...document.querySelectorAll('.side-row svg line[stroke="#1d2430"][stroke-width="1.5"]')].map((l) => l.getAttribute('x1')),
    lines: [...document.querySelectorAll('.side-now')].map((p) => p.textContent),
  }));
  assert.equal(now.xs.length, 5, JSON.stringify(now));
  for (const x of now.xs) assert.equal(x, now.xs[0]);
  // Store-all is done first; recompute-all, the slowest, is still running.
  assert.match(now.lines[0], /^done at 300\.00 ms/);
  assert.match(now.lines[1], /^at .*: (F|B).* in use$/);
  await page.locator('#side-race').click();
  assert.equal(await page.locator('#side-race').getAttribute('aria-pressed'), 'false');
  for (const size of [[1280, 720], [1920, 1080]]) {
    await page.setViewportSize({ width: size[0], height: size[1] });
    await page.locator('#side-by-side').scrollIntoViewIfNeeded();
    const shot = join(tmpdir(), `remat-race-${size[0]}.png`);
    await page.locator('#side-by-side').screenshot({ path: shot });
    console.log(`screenshot: ${shot}`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

test('your guess: pick the stages to keep, then reveal its peak and time against rotor with the same memory', async () => {
  // Could fail if the picked stages were read as segment starts rather
  // than kept outputs (the peak would not be `remat checkpoints --set`'s
  // simulated one), if rotor were asked at the page's budget instead of
  // the guess's peak, or if the result showed before Reveal or survived a
  // change of the set.
  const chain = 'vgg19-h100';
  const { page, errors } = await open(context, `#chain=${chain}&algorithm=rotor`);
  await waitForPlan(page);
  for (const l of [4, 8, 16]) await page.locator(`.guess-stage[data-stage="${l}"]`).click();
  assert.equal(await page.locator('#guess-result').count(), 0, 'nothing shown before Reveal');
  await page.locator('#guess-reveal').click();
  const result = page.locator('#guess-result');
  await result.waitFor();
  const peak = Number(await result.getAttribute('data-peak'));
  const seconds = Number(await result.getAttribute('data-seconds'));
  const optimum = Number(await result.getAttribute('data-optimum-seconds'));
  const cli = JSON.parse(execFileSync(CLI, ['checkpoints', `example:${chain}`, '--model', 'pytorch', '--set', '4,8,16', '--json'], { encoding: 'utf8' }));
  assert.equal(peak, cli.simulated_peak_bytes);
  const rotor = solve(chain, ['-a', 'rotor', '-b', String(peak)]);
  assert.ok(Math.abs(optimum - rotor.makespan_seconds) <= 1e-12 * rotor.makespan_seconds, `${optimum} vs ${rotor.makespan_seconds}`);
  assert.ok(optimum <= seconds, 'rotor is never slower with the same memory');
  assert.match(await result.innerText(), /^Keeping \{4, 8, 16, 24\}: peak .* step .*\. Rotor with the same memory: step .*\n+Your peak, during /);
  // Changing the set hides the answer until the next Reveal.
  await page.locator('.guess-stage[data-stage="8"]').click();
  assert.equal(await result.count(), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

test('where does the time double: the guess against rotor\'s own threshold', async () => {
  // Could fail if the threshold were off by a byte (rotor one byte below
  // it would not take more than twice), or the guess read from the page's
  // budget instead of its own slider. (The bisection returning its lower
  // end fails the unit test `the_time_doubles_at_one_budget`: tried.)
  const chain = 'teaching';
  const { page, errors } = await open(context, `#chain=${chain}&algorithm=rotor&budget=600000000`);
  await waitForPlan(page);
  await page.locator('#double-slider').fill('200');
  const guess = Number(await page.locator('#double-guess').getAttribute('data-budget'));
  await page.locator('#double-reveal').click();
  const at = Number(await page.locator('#double-result').getAttribute('data-budget'));
  const twice = 2 * solve(chain, ['-a', 'store-all', '-b', '100%']).makespan_seconds;
  assert.ok(solve(chain, ['-a', 'rotor', '-b', String(at)]).makespan_seconds <= twice);
  const below = solve(chain, ['-a', 'rotor', '-b', String(at - 1)]);
  assert.ok(!below.feasible || below.makespan_seconds > twice, JSON.stringify(below.makespan_seconds));
  const text = await page.locator('#double-result').textContent();
  const rotorAtGuess = execFileSync(CLI, ['solve', `example:${chain}`, '-a', 'rotor', '-b', String(guess)], { encoding: 'utf8' })
    .split('\n').find((l) => l.startsWith('makespan')).split(/\s{2,}/)[1];
  assert.ok(text.includes(`rotor takes ${rotorAtGuess}`), text);
  // Moving the guess hides the answer until the next reveal.
  await page.locator('#double-slider').fill('600');
  assert.equal(await page.locator('#double-result').count(), 0);
  // VGG-19: rotor never doubles.
  await page.goto(new URL(`#chain=vgg19-h100&algorithm=rotor`, page.url()).href);
  await waitForPlan(page);
  await page.locator('#double-reveal').click();
  assert.match(await page.locator('#double-result').textContent(), /never doubles/);
  assert.deepEqual(errors, []);
  await page.close();
});
