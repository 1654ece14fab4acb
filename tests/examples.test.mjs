// The built-in examples in the explorer: measured chains next to analytic
// ones, and each chain's `source` on the page (issue 10, section 2).
// Run through scripts/browser-tests.sh, which builds and serves the page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, open, nextPlan, planId, text } from './helpers.mjs';

const CLI = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

test('the page opens a measured chain and shows where its numbers come from', async () => {
  // Could fail if the default example were analytic again, if the source
  // line were dropped or showed another chain's text. Mutation tried: the
  // ChainSourceLine removed from the header: the locator timed out.
  const { page, errors } = await open(context);
  assert.equal(await page.locator('#chain-select').inputValue(), 'vgg19-h100');
  assert.match(await text(page, '.chain-about strong'), /VGG-19.*H100, measured/);
  assert.equal((await text(page, '#chain-source .source-tag')).trim().toLowerCase(), 'measured');
  // The source, as `remat examples --write` has it, is on the page.
  const chain = JSON.parse(execFileSync(CLI, ['examples', '--write', 'vgg19-h100'], { encoding: 'utf8' }));
  assert.match(chain.source, /^measured on one NVIDIA H100/);
  assert.equal(await page.locator('#chain-source .source-text').textContent(), chain.source);
  // Collapsed it is one line; opened, the whole text wraps in view.
  const closed = await page.locator('#chain-source').boundingBox();
  assert.ok(closed.height < 30, `one line when closed (${closed.height}px)`);
  await page.screenshot({ path: join(tmpdir(), 'remat-measured-example-closed.png'), clip: { x: 0, y: 0, width: 1400, height: 200 } });
  await page.locator('#chain-source summary').click();
  const full = page.locator('#chain-source .source-full');
  assert.ok(await full.isVisible());
  for (const words of ['H100', 'PyTorch 2.11', 'batch 32', 'caching-allocator', 'CUDA events']) {
    assert.ok((await full.innerText()).includes(words), `the source says ${words}`);
  }
  const opened = await page.locator('#chain-source').boundingBox();
  assert.ok(opened.height > 3 * closed.height, 'the whole text is shown');
  const shot = join(tmpdir(), 'remat-measured-example.png');
  await page.screenshot({ path: shot, clip: { x: 0, y: 0, width: 1400, height: 420 } });
  console.log(`screenshot: ${shot}`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the picker groups measured and analytic chains, and lists what `remat examples` lists', async () => {
  const { page, errors } = await open(context, '#chain=teaching');
  const groups = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#chain-select optgroup')]
    .map((g) => [g.label, [...g.querySelectorAll('option')].map((o) => o.value)])));
  assert.deepEqual(Object.keys(groups), ['Measured', 'Analytic (rough estimates)', 'Hand-made']);
  for (const name of ['vgg19-h100', 'resnet50-h100', 'gpt2-h100-efficient', 'gpt2-h100-math']) {
    assert.ok(groups.Measured.includes(name), name);
  }
  // gpt2-sac: gpt2 with a menu of selective-checkpointing policies per block (issue 41).
  assert.deepEqual(groups['Analytic (rough estimates)'], ['vgg19', 'resnet50', 'gpt2', 'gpt2-sac']);
  // The CLI's list is the picker's, with the same kind in front.
  const lines = execFileSync(CLI, ['examples'], { encoding: 'utf8' }).trim().split('\n');
  const listed = lines.map((l) => /^example:(\S+)\s+(\S+)/.exec(l)).map((m) => [m[1], m[2]]);
  assert.deepEqual(listed.map((m) => m[0]).sort(), Object.values(groups).flat().sort());
  for (const [name, kind] of listed) {
    const group = Object.entries(groups).find(([, names]) => names.includes(name))[0];
    assert.ok(group.toLowerCase().startsWith(kind.replace(/[:,]$/, '')), `${name}: ${kind} in ${group}`);
  }
  // Choosing an analytic chain shows its source, labelled rough.
  const id = await planId(page);
  await page.locator('#chain-select').selectOption('gpt2');
  await nextPlan(page, id);
  assert.equal((await text(page, '#chain-source .source-tag')).trim().toLowerCase(), 'analytic');
  assert.match(await page.locator('#chain-source .source-text').textContent(), /^analytic, rough/);
  assert.deepEqual(errors, []);
  await page.close();
});
