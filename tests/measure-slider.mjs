// Measures slider → updated views at L = 300 (not a timed test):
//   EXPLORER_URL=http://127.0.0.1:PORT/ node tests/measure-slider.mjs
// Imports a synthetic 300-stage chain, waits for the rotor table (built in
// the worker), then moves the slider N times. Each sample is performance.now()
// from the input event until the page has shown the new plan (the root's
// data-plan-id changed, set in the same update as the charts) and the next
// animation frame has started, i.e. the DOM work is done.
import { launch, open, waitForPlan, syntheticChain, importFile } from './helpers.mjs';

const N = Number(process.env.SAMPLES ?? 40);
const context = await launch();
const { page, errors } = await open(context, '?timing#chain=teaching');
const chain = syntheticChain(300);
const t0 = Date.now();
await importFile(page, 'synthetic-300.json', chain);
await page.waitForFunction(() => document.querySelector('.chain-about').textContent.includes('300 stages'));
await waitForPlan(page, 600000);
console.log(`rotor table for L=300 built and first plan shown in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
console.log('status:', await page.locator('#plan-status').innerText().catch(() => '?'));

const samples = await page.evaluate(async (n) => {
  const slider = document.querySelector('#budget-slider');
  const root = document.querySelector('.app');
  const out = [];
  for (let i = 0; i < n; i++) {
    const v = 200 + Math.round((i * 617) % 780);
    const before = root.dataset.planId;
    const start = performance.now();
    slider.value = String(v);
    slider.dispatchEvent(new Event('input', { bubbles: true }));
    await new Promise((resolve) => {
      const check = () => (root.dataset.planId !== before ? resolve() : setTimeout(check, 0));
      check();
    });
    const shown = performance.now();
    await new Promise((r) => requestAnimationFrame(() => r()));
    const m = window.__rematMarks || {};
    out.push({ shown: shown - start, frame: performance.now() - start,
      sent: m.sent - start, received: m.received - start, simulated: m.simulated - start, chain: m.chain - start, memory: m.memory - start, timeline: m.timeline - start,
      ops: document.querySelector('#stat-ops').textContent });
    await new Promise((r) => setTimeout(r, 30));
  }
  return out;
}, N);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
console.log(`ops per schedule: ${samples.map((s) => s.ops).slice(0, 5).join(', ')} …`);
console.log(`slider → views updated (DOM): median ${median(samples.map((s) => s.shown)).toFixed(1)} ms, ` +
  `max ${Math.max(...samples.map((s) => s.shown)).toFixed(1)} ms over ${N} moves`);
for (const k of ['sent', 'received', 'simulated', 'chain', 'memory', 'timeline']) {
  console.log(`  ${k} at median ${median(samples.map((s) => s[k])).toFixed(1)} ms after the input event`);
}
console.log(`slider → next frame: median ${median(samples.map((s) => s.frame)).toFixed(1)} ms`);
if (errors.length) console.log('page errors:', errors);
await context.close();
