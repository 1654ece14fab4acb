// Both ends of the budget slider show a plan (issue 25 item 1, issue 26
// item 2): rotor and revolve are exact in bytes in the page (the
// breakpoint table, as `remat solve`), so at M_low and at M_high the plan is
// feasible and nothing is said about rounding; a chain whose breakpoints
// would pass the grid's memory falls back to the grid, says so in words
// (no command-line flag), and its slider starts where its grid plans fit.
// Run through scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, open, nextPlan, planId, text, importLongChain } from './helpers.mjs';

let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

/// Moves the slider to `value` (0..1000) and waits for the plan there.
async function slideTo(page, value) {
  const slider = page.locator('#budget-slider');
  if (Number(await slider.inputValue()) === value) return;
  const id = await planId(page);
  await slider.fill(String(value));
  await nextPlan(page, id);
}

/// The status line once the shown algorithm's table is built and planned.
async function status(page) {
  await page.locator('#plan-status').waitFor();
  return text(page, '#plan-status');
}

// Fails if the page planned on the grid again (`SlotPolicy::Fixed` in the
// service: "rounding may hide" in the line, a Re-plan button, and before
// this change "✗ infeasible on the grid" at the left end of 6 examples),
// if the slider's left end were below what the shown table meets
// (revolve's own M_low is above rotor's on some chains), or if the
// Re-plan button stayed for exact tables. Mutation run:
// `build(.., SlotPolicy::Fixed, ..)` in the service's Build: the left end
// of vgg19-h100 showed "≈ on a grid, maybe not the best: 496 slots of
// 5.58 MiB; rounding may hide up to 147 MiB (7.38% of the budget)".
test('on every example both slider ends show a feasible, exact plan', async () => {
  const { page, errors } = await open(context, '#chain=teaching');
  const names = await page.evaluate(() => [...document.querySelectorAll('#chain-select option')].map((o) => o.value)
    .filter((v) => v !== 'imported'));
  assert.ok(names.length >= 10, names.join(' '));
  const seen = [];
  for (const name of names) {
    for (const alg of ['rotor', 'revolve']) {
      const p = (await open(context, `#chain=${name}&algorithm=${alg}`)).page;
      for (const end of [0, 1000]) {
        await slideTo(p, end);
        const line = await status(p);
        seen.push(`${name} ${alg} ${end}: ${line.split('\n')[0]}`);
        assert.match(line, /^✓/, `${name} ${alg} at ${end}: ${line}`);
        assert.doesNotMatch(line, /rounding may hide|grid/, `${name} ${alg} at ${end}`);
        assert.equal(await p.locator('#replan-exact').count(), 0, `${name} ${alg} at ${end}: no Re-plan`);
        assert.notEqual((await text(p, '#stat-makespan')).trim(), '—');
      }
      await p.close();
    }
  }
  console.log(seen.join('\n'));
  assert.deepEqual(errors, []);
  await page.close();
});

// Fails if the fallback were silent (the line would say only "slots of"),
// if the certificate were not carried to the page (the line would say
// "rounding may hide"; mutation run: `certify` not called in the
// service's Build), if Re-plan offered itself for its own answer,
// named a flag of the CLI (`--max-table`, `--slots`), if the re-plan did
// not refine (its line would say "N slots of …", not "refined to"), or left the slider's
// left end at M_low, where the M_high grid has no plan ("✗ infeasible on
// the grid"). Mutation run: `slider_low` returning M_low: the left end
// showed "✗ infeasible on the grid of 499 slots".
test('a 300-stage chain on the grid says so, and its left end is a plan', async () => {
  const { page, errors } = await open(context, '#chain=teaching');
  await importLongChain(page, 300);
  for (const end of [0, 1000]) {
    await slideTo(page, end);
    const line = await status(page);
    console.log(`300 stages at ${end}: ${line}`);
    assert.doesNotMatch(line, /✗|infeasible/, `at ${end}: ${line}`);
    assert.doesNotMatch(line, /--/, `no command-line flag: ${line}`);
    assert.notEqual((await text(page, '#stat-makespan')).trim(), '—');
    if (end === 0) {
      // The certificate (issue 44): the gap to the optimum, not what the
      // rounding may hide; where it is above 0.5 %, no green ✓ and the
      // finer plan offered, once: its own answer never offers it again.
      assert.match(line, /within [\d.]+ % of the optimum .* planned on a grid/, line);
      assert.doesNotMatch(line, /rounding may hide/, line);
      const gap = Number(line.match(/within ([\d.]+) %/)[1]);
      if (gap > 0.5) {
        assert.match(line, /^≈ on a grid: /, line);
        assert.equal(await page.locator('#replan-exact').count(), 1);
        const id = await planId(page);
        await page.locator('#replan-exact').click();
        await nextPlan(page, id);
        const again = await status(page);
        console.log(`300 stages, re-planned: ${again}`);
        assert.match(again, /re-planned exactly at this budget/, again);
        assert.equal(await page.locator('#replan-exact').count(), 0, again);
        // Refined on finer grids (issue 44, item 2): the gap reached is
        // below the table's, and within 0.5 % unless the line says what
        // stopped it first.
        const reached = Number(again.match(/within ([\d.]+) %/)[1]);
        assert.ok(reached < gap, `${reached} vs ${gap}`);
        if (reached > 0.5) {
          assert.match(again, /refined to \d+ slots of .* rounds? \(/, again);
          assert.match(again, /stopped at the (time given|table size limit)/, again);
        }
      } else {
        assert.match(line, /^✓/, line);
      }
    } else {
      assert.match(line, /^✓/, line);
    }
  }
  // The slider says where it starts, against M_low.
  const range = await text(page, '.field.slider .range');
  assert.match(range, /\(rotor the least its grid plans fit; M_low [^)]+\) … M_high/, range);
  assert.deepEqual(errors, []);
  await page.close();
});
