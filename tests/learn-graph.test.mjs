// Learn's graph of the step (issue 27, item 1): at every operation of a
// schedule that recomputes, the nodes the graph marks resident are the
// tensors `remat simulate --states` lists on the device, the node the op
// writes is outlined, a recomputed forward is striped and its caption says
// which time it runs; Run plays on the page's one cursor (the chain card
// follows), stops at the end, and wraps with Loop; ←/→ step while the
// graph is in view. Run through scripts/browser-tests.sh.
//
// How it fails: a node marked that the simulator does not list (or the
// reverse), ā^ℓ drawn as a^ℓ alone, the outline on another node than the
// op writes, a caption not the core's, playback that runs past the end or
// does not wrap, arrows that do nothing with the graph in view.
// Mutation tried: ā^ℓ marked as a^ℓ alone (`Held::Output` for
// `TensorId::Saved` in `StepGraph::marks`) — "op 9: resident
// a^0,a^10,a^4,a^6,a^8,a^9,δ^10 against the simulator's
// a^0,a^4,a^6,a^8,a^9,ā^10,δ^10".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, open } from './helpers.mjs';

const CLI = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
// 572 MiB: rotor keeps a few checkpoints and recomputes 12 forwards.
const TEACHING = '#chain=teaching&algorithm=rotor&budget=599785472&bandwidth=12000000000';

let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

/// The schedule on the page, exported, and the simulator's states for it.
async function simulatorStates(page) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#export-schedule').click()]);
  const file = join(mkdtempSync(join(tmpdir(), 'remat-graph-')), 'schedule.json');
  await download.saveAs(file);
  const schedule = JSON.parse(readFileSync(file, 'utf8'));
  const out = JSON.parse(execFileSync(CLI, ['simulate', 'example:teaching', file, '--states', '--json'], { encoding: 'utf8' }));
  return { ops: schedule.ops, states: out.states };
}

/// What the graph shows: the caption's op, the resident tensors, the node
/// outlined, the nodes striped.
function shown(page) {
  return page.evaluate(() => ({
    caption: document.querySelector('#graph-caption')?.dataset.caption ?? null,
    op: Number(document.querySelector('#graph-caption')?.dataset.op ?? -1),
    resident: [...document.querySelectorAll('#graph-svg [data-resident]')].map((g) => g.dataset.resident).sort(),
    current: document.querySelector('#graph-current')?.dataset.node ?? null,
    striped: [...document.querySelectorAll('#graph-svg [data-recomputed]')].map((g) => g.dataset.tensor),
  }));
}

const atOp = (page, i) => page.waitForFunction((k) => document.querySelector('#graph-caption')?.dataset.op === String(k), i);

/// The node an op writes: a forward a^ℓ, B^ℓ δ^{ℓ−1}.
function written(op) {
  return op.op === 'backward' ? `δ^${op.stage - 1}` : `a^${op.stage}`;
}

test('the graph marks what the simulator holds at every operation', async () => {
  const { page, errors } = await open(context, TEACHING);
  const { ops, states } = await simulatorStates(page);
  assert.ok(ops.length > 20, `${ops.length} ops`);
  await page.locator('button[data-place="place-learn"]').click();
  await page.locator('#graph-svg').scrollIntoViewIfNeeded();
  let recomputed = 0;
  for (let i = 0; i < states.length; i++) {
    await page.locator('#graph-next').click();
    await atOp(page, i);
    const g = await shown(page);
    const want = states[i].device.slice().sort();
    assert.deepEqual(g.resident, want, `op ${i}: resident ${g.resident} against the simulator's ${want}`);
    assert.equal(g.caption, states[i].caption, `op ${i}: caption`);
    assert.equal(g.current, written(ops[i]), `op ${i}: the node written`);
    if (/recomputed \(2nd time\)/.test(g.caption)) {
      recomputed++;
      assert.ok(g.striped.includes(written(ops[i])), `op ${i}: ${written(ops[i])} striped (${g.striped})`);
    }
  }
  assert.ok(recomputed > 0, 'some forward is recomputed a 2nd time');
  // One colour per meaning (tests/colours.test.mjs): a tensor's fill in the
  // graph is one the memory curve gives it.
  await page.locator('#graph-prev').click();
  const fills = await page.evaluate(() => {
    const of = (sel) => {
      const out = {};
      for (const p of document.querySelectorAll(sel)) (out[p.dataset.kind] ??= new Set()).add(p.getAttribute('fill').toLowerCase());
      return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, [...v]]));
    };
    return { graph: of('#graph-svg rect[data-kind]'), memory: of('#memory-svg path[data-kind]') };
  });
  for (const k of ['a', 'ā', 'δ']) {
    assert.ok(fills.graph[k], `the graph fills ${k} somewhere`);
    for (const f of fills.graph[k]) assert.ok(fills.memory[k].includes(f), `${k}: graph ${f}, memory ${fills.memory[k]}`);
  }
  // The chain card follows the same cursor.
  assert.equal(await page.locator('#chain-current').count(), 1);
  assert.deepEqual(errors, []);
  await page.close();
});

test('Run plays to the end and stops, Loop wraps, the arrows step with the graph in view', async () => {
  const { page, errors } = await open(context, TEACHING);
  await page.locator('button[data-place="place-learn"]').click();
  await page.locator('#graph-svg').scrollIntoViewIfNeeded();
  // Out of step mode, with only the graph on screen: → starts at op 0.
  await page.locator('#graph-svg').click();
  await page.keyboard.press('ArrowRight');
  await atOp(page, 0);
  await page.keyboard.press('ArrowRight');
  await atOp(page, 1);
  await page.keyboard.press('ArrowLeft');
  await atOp(page, 0);
  const n = await page.evaluate(() => Number(document.querySelector('#graph-caption').dataset.count));
  await page.locator('#graph-speed').selectOption('40');
  // The stepper's speed is the same setting.
  assert.equal(await page.locator('#step-speed').inputValue(), '40');
  await page.locator('#graph-play').click();
  await atOp(page, n - 1);
  await page.waitForFunction(() => document.querySelector('#graph-play').getAttribute('aria-label') === 'Run the graph');
  await page.waitForTimeout(300);
  assert.equal((await shown(page)).op, n - 1, 'stopped at the last op');
  // Loop: from two before the end, the cursor comes round to the start.
  await page.locator('#graph-prev').click();
  await page.locator('#graph-prev').click();
  await atOp(page, n - 3);
  await page.locator('#graph-loop').check();
  await page.locator('#graph-play').click();
  await page.waitForFunction((last) => Number(document.querySelector('#graph-caption').dataset.op) < last - 3, n);
  await page.locator('#graph-play').click();
  assert.equal(await page.locator('#graph-play').getAttribute('aria-label'), 'Run the graph');
  assert.deepEqual(errors, []);
  await page.close();
});
