// Per-stage menus on the page (issue 41, item 5): on gpt2-sac, where each
// block has a menu of selective-checkpointing policies, rotor's plan runs
// some of them; the layer chain marks those stages (the box filled up to
// what the option keeps, the rest hollow and dashed, the policy's name on a
// bracket over each run of them), its tooltip names the policy, what it
// keeps against the classic ā and the time its backward adds, the plan and
// the step-through say which options run — all as `remat solve` says them.
// An algorithm that does not choose options says so. Run through
// scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { launch, open, waitForPlan, nextPlan, planId, text } from './helpers.mjs';

const CLI = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

/** `remat solve example:gpt2-sac -a rotor -b 3GiB`: its JSON report and its
 * `option` lines (`stage 6 (block 4): save_mm_attention keeps 120 MiB of
 * 192 MiB, +188.7 µs in its backward`), by stage. */
function solve() {
  const args = ['solve', 'example:gpt2-sac', '-a', 'rotor', '-b', '3GiB'];
  const report = JSON.parse(execFileSync(CLI, [...args, '--json'], { encoding: 'utf8' }));
  const lines = {};
  for (const line of execFileSync(CLI, args, { encoding: 'utf8' }).split('\n')) {
    const m = line.match(/^option\s+stage (\d+) .*: (\S+) keeps (.+) of (.+), \+(.+) in its backward$/);
    if (m) lines[m[1]] = { policy: m[2], kept: m[3], classic: m[4], extra: m[5] };
  }
  return { report, lines };
}

/** Moves the pointer over stage `l`'s box (found by the number under it)
 * and returns the tooltip's text. */
async function hover(page, l) {
  const at = await page.evaluate((l) => {
    const svg = document.querySelector('#chain-svg');
    const r = svg.getBoundingClientRect();
    const n = [...svg.querySelectorAll('text.stage-number')].find((t) => t.textContent === String(l));
    const b = n.getBoundingClientRect();
    return { x: b.x + b.width / 2, y: r.y + r.height * 0.7 };
  }, l);
  await page.mouse.move(at.x, at.y);
  await page.waitForFunction((l) => document.querySelector('.chart-wrap .tooltip b')?.textContent.startsWith(`stage ${l}:`), l);
  return page.locator('.chart-wrap .tooltip').first().innerText();
}

// Fails if the chain marks other stages than those whose F_all runs an
// option (or none: the marks are drawn from the plan's ops), names another
// policy than the one that runs (menu entry k instead of k − 1), says
// other bytes or times than the CLI, or if the plan's line, its number in
// the bar or the not-used note are missing. Mutation tried: the page's
// `picks_by_stage` reading menu entry k instead of k − 1 — the marks' policies
// were save_every_other_mm and save_nothing where the CLI runs
// save_mm_attention and save_attention (fails at the marks' deepEqual).
test('the layer chain marks the menu options rotor runs and its tooltip names the policy, as `remat solve` does', async () => {
  const { report, lines } = solve();
  assert.ok(report.options.length > 0, 'rotor runs options on gpt2-sac at 3 GiB');
  assert.equal(Object.keys(lines).length, report.options.length);
  const { page, errors } = await open(context, `#chain=gpt2-sac&algorithm=rotor&budget=${report.budget_bytes}`);
  await waitForPlan(page);
  // The built-in chain is in the picker.
  assert.equal(await page.locator('#chain-select').inputValue(), 'gpt2-sac');
  assert.equal(await page.locator('#chain-select option[value="gpt2-sac"]').count(), 1);

  // The marks: one per stage whose F_all runs an option, with its policy
  // and the part of ā it does not keep drawn dashed.
  const marks = await page.evaluate(() => [...document.querySelectorAll('#chain-svg g.menu-option')].map((g) => ({
    stage: Number(g.dataset.stage),
    option: Number(g.dataset.option),
    policy: g.dataset.policy,
    dashed: g.querySelector('rect.option-rest')?.getAttribute('stroke-dasharray') ?? null,
  })));
  assert.deepEqual(
    marks.map(({ stage, option, policy }) => ({ stage, option, policy })),
    report.options.map(({ stage, option, policy }) => ({ stage, option, policy })),
  );
  for (const m of marks) assert.ok(m.dashed, `stage ${m.stage}: the part not kept is drawn dashed`);
  // The badges: one over each run of stages with the same option, its
  // policy's short name (or [k] where it does not fit).
  const runs = await page.evaluate(() => [...document.querySelectorAll('#chain-svg g.menu-run')].map((g) => ({
    first: Number(g.dataset.first),
    last: Number(g.dataset.last),
    policy: g.dataset.policy,
    label: g.querySelector('text.option-label')?.textContent ?? null,
  })));
  for (const m of marks) {
    const run = runs.find((r) => r.first <= m.stage && m.stage <= r.last);
    assert.ok(run, `stage ${m.stage} is under a badge`);
    assert.equal(run.policy, m.policy, `stage ${m.stage}`);
    assert.ok(run.label === m.policy.replace(/^save_/, '') || run.label === `[${m.option}]`, `stage ${m.stage}: badge ${run.label}`);
  }
  assert.ok(runs.every((r) => r.label === r.policy.replace(/^save_/, '')), `every badge names its policy at 1400 px: ${JSON.stringify(runs)}`);

  // The tooltip of a stage running an option: the CLI's numbers.
  for (const stage of [report.options[0].stage, report.options.at(-1).stage]) {
    const want = lines[stage];
    const tip = await hover(page, stage);
    assert.ok(tip.includes(`runs ${want.policy} (menu option`), tip);
    assert.ok(tip.includes(`keeps ${want.kept} of ${want.classic} (the classic`), tip);
    assert.ok(tip.includes(`+${want.extra}`), tip);
  }
  // A block with a menu whose classic F_all runs.
  const chosen = new Set(report.options.map((o) => o.stage));
  const unused = [2, 3, 4, 5].find((l) => !chosen.has(l));
  assert.ok(unused, 'a block keeps its classic F_all');
  assert.match(await hover(page, unused), /menu: 4 options, classic chosen/);
  await page.mouse.move(0, 0);

  // The plan: its number in the bar, its line under the chain, the live region.
  assert.equal(await text(page, '#stat-menu'), `${report.options.length} of 12`);
  const line = await page.locator('#chain-menus').getAttribute('data-line');
  assert.ok(line.startsWith(`${report.options.length} of 12 stages keep less with a menu option: `), line);
  for (const o of report.options) assert.ok(line.includes(o.policy), `${o.policy} in ${line}`);
  assert.match(await text(page, '#live-status'), /stages keep less with a menu option/);
  assert.match(await page.locator('#chain-svg').getAttribute('aria-label'), new RegExp(`; ${report.options.length} run a menu option that keeps less\\.$`));

  // The step-through names the policy of an F_all that runs an option.
  const first = report.options[0];
  const index = report.ops.findIndex((op) => op.op === 'forward_all' && op.stage === first.stage && op.option === first.option);
  assert.ok(index >= 0, 'the schedule runs the option');
  await page.locator('#step-first').click();
  for (let i = 0; i < index; i++) await page.locator('#step-next').click();
  await page.waitForFunction((op) => document.querySelector('#step-explain .opname')?.dataset.op === op, `F_all^${first.stage}[${first.option}]`);
  assert.equal((await text(page, '#step-explain .op-policy')).trim(), first.policy);
  await page.locator('#step-clear').click();

  // An algorithm that does not choose options says so, and marks nothing.
  const id = await planId(page);
  await page.selectOption('#algorithm-select', 'sequential');
  await nextPlan(page, id);
  await page.waitForFunction(() => document.querySelector('#stat-menu')?.textContent === 'not used');
  assert.match(await text(page, '#chain-menus'), /^Menus not used by sequential: it runs the classic F\s?all everywhere/);
  assert.equal(await page.locator('#chain-svg g.menu-option').count(), 0);
  assert.deepEqual(errors, []);
  await page.close();
});

// A chain file with `menu` entries, imported, is planned with its options
// as the built-in chain is. Fails if the page's reader dropped the menus.
test('an imported chain file with menus keeps them', async () => {
  const chain = JSON.parse(execFileSync(CLI, ['examples', '--write', 'gpt2-sac'], { encoding: 'utf8' }));
  assert.ok(chain.stages.some((s) => Array.isArray(s.menu) && s.menu.length > 0), 'the file has menus');
  const { report } = solve();
  const { page, errors } = await open(context, `#chain=gpt2-sac&algorithm=rotor&budget=${report.budget_bytes}`);
  const id = await planId(page);
  await page.locator('#import-input').setInputFiles({
    name: 'gpt2-sac.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(chain)),
  });
  await nextPlan(page, id);
  await page.waitForFunction(() => document.querySelector('#chain-select').value === 'imported');
  await waitForPlan(page);
  // The imported chain's budget: the CLI's, if it is not already.
  if (await page.locator('#budget-slider').getAttribute('aria-valuetext') !== '3.00 GiB') {
    const id2 = await planId(page);
    await page.locator('#budget-input').fill(String(report.budget_bytes));
    await page.locator('#budget-input').press('Enter');
    await nextPlan(page, id2);
  }
  await page.waitForFunction((n) => document.querySelectorAll('#chain-svg g.menu-option').length === n, report.options.length);
  const stages = await page.evaluate(() => [...document.querySelectorAll('#chain-svg g.menu-option')].map((g) => Number(g.dataset.stage)));
  assert.deepEqual(stages, report.options.map((o) => o.stage));
  assert.deepEqual(errors, []);
  await page.close();
});
