// Work that does not block (issue 26, point 4): the max-batch search runs
// in its own worker, so it answers within 3 s of its click on every
// example while the plans' worker is busy with offloading solves and the
// compare rows. Run through scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { launch, open } from './helpers.mjs';

const CLI = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
const EXAMPLES = execFileSync(CLI, ['examples'], { encoding: 'utf8' })
  .trim().split('\n').map((l) => l.split(/\s+/)[0].replace('example:', ''));

let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

// Fails if Max batch waits behind the plans' worker (one queue: 75–83 s
// before issue 26), or if a new chain leaves the side worker busy with the
// old one's search. Mutation tried: MaxBatch sent to the main worker
// (`Backend::send` without its side branch) — resnet50-h100 answered after
// the pofo solves, 9.8 s after its click. The page is made busy first:
// pofo chosen (each budget a solve in the main worker) and the slider moved
// five times (five plans and five rounds of compare rows queued).
test('Max batch answers within 3 s of its click on every example, whatever the plans\' worker is doing', async () => {
  const page = (await open(context, '#chain=vgg19&algorithm=rotor')).page;
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const times = {};
  for (const name of EXAMPLES) {
    await page.selectOption('#chain-select', name);
    await page.waitForFunction((n) => document.querySelector('#chain-select').value === n, name);
    await page.selectOption('#algorithm-select', 'pofo');
    for (const v of [300, 450, 600, 750, 900]) {
      await page.locator('#budget-slider').fill(String(v));
    }
    if (await page.locator('#maxbatch-batch').count()) {
      await page.locator('#maxbatch-batch').fill('1');
      await page.locator('#maxbatch-batch').dispatchEvent('change');
    }
    const t0 = Date.now();
    await page.locator('#maxbatch-run').click();
    await page.waitForSelector('#maxbatch-svg g.maxbatch-row', { timeout: 60000 });
    times[name] = Date.now() - t0;
  }
  console.log('max batch, ms from click to bars:', JSON.stringify(times));
  for (const [name, ms] of Object.entries(times)) {
    assert.ok(ms <= 3000, `${name}: ${ms} ms`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});
