// Measures the planner's speed in the page (not a timed test):
//   EXPLORER_URL=http://127.0.0.1:PORT/ node tests/measure-speed.mjs [out-dir]
// Imports the tests' synthetic chains (tests/helpers.mjs) and reports, in ms:
// the worker's rotor table build at L = 200 and 300 (the page's "table
// built in … ms (worker)": table + trade-off curve, the same `Build` the
// native run times), and one pofo solve at L = 60, half-way between M_low
// and M_high at 12 GB/s (from choosing pofo to its plan on screen). With an
// out-dir it writes the chains there, for the native side:
//   REMAT_SPEED_CHAINS=dir/synthetic-200.json,… cargo test --release \
//     -p remat-explorer --lib native_speed -- --ignored --nocapture
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { launch, open, waitForPlan, syntheticChain, importFile, planId, nextPlan } from './helpers.mjs';

const REPS = Number(process.env.REPS ?? 3);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const out = process.argv[2];
if (out) {
  for (const n of [60, 200, 300]) writeFileSync(join(out, `synthetic-${n}.json`), JSON.stringify(syntheticChain(n)));
}

const context = await launch();
const { page, errors } = await open(context, '#chain=teaching&algorithm=rotor');

async function load(n, name) {
  await importFile(page, name, syntheticChain(n, name.replace('.json', '')));
  await page.waitForFunction((name) => document.querySelector('.chain-about').textContent.includes(name.replace('.json', '')), name);
  await waitForPlan(page, 600000);
}

async function rotorBuild(n) {
  const times = [];
  for (let r = 0; r < REPS; r++) {
    // A new name each time: the page builds the table again.
    await load(n, `synthetic-${n}-run${r}.json`);
    const status = await page.locator('#plan-status').innerText();
    const m = status.match(/table built in (\d+) ms \(worker\)/);
    if (!m) throw new Error(`no worker build time in: ${status}`);
    times.push(Number(m[1]));
  }
  return median(times);
}

async function pofo60() {
  const times = [];
  for (let r = 0; r < REPS; r++) {
    await page.selectOption('#algorithm-select', 'rotor');
    await load(60, `synthetic-60-run${r}.json`);
    // The compare rows' offloading solves (pofo among them) run in the
    // worker first; the pofo plan is timed alone, as natively.
    await page.waitForFunction(() => !document.body.innerText.includes('solving in the worker'), null, { timeout: 600000 });
    const before = await planId(page);
    const t = await page.evaluate(() => {
      window.__pofoStart = performance.now();
      return window.__pofoStart;
    });
    await page.selectOption('#algorithm-select', 'pofo');
    await nextPlan(page, before, 600000);
    await page.waitForFunction(() => !document.querySelector('#cancel-build'), null, { timeout: 600000 });
    times.push(await page.evaluate((t) => performance.now() - t, t));
    if (r === 0) console.log('pofo view: ' + await page.evaluate(() => location.hash));
  }
  return median(times);
}

const result = {
  rotor_build_ms_200: await rotorBuild(200),
  rotor_build_ms_300: await rotorBuild(300),
  pofo_plan_ms_60: await pofo60(),
};
console.log('SPEED page ' + JSON.stringify(result));
if (errors.length) console.log('page errors:', errors);
await context.close();
