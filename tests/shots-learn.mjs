// Screenshots of the Learn place's modes for review (not a test):
//   EXPLORER_URL=http://127.0.0.1:PORT/ node tests/shots-learn.mjs OUT_DIR
// At 1920×1080 (a projector) and 1280×720 (a laptop on a projector): the
// lesson's card, the step as a graph while stepping, the strategies raced,
// both guesses revealed, and each of the five steps presented.
import { join } from 'node:path';
import { launch, open, waitForPlan } from './helpers.mjs';

const out = process.argv[2] ?? '/tmp';
const context = await launch();
const errors = [];
for (const [w, h] of [[1920, 1080], [1280, 720]]) {
  const size = `${w}x${h}`;
  const { page, errors: e } = await open(context, '#chain=teaching&algorithm=rotor&budget=600000000');
  await page.setViewportSize({ width: w, height: h });
  await page.locator('#lesson').scrollIntoViewIfNeeded();
  await page.evaluate(() => document.querySelector('#place-learn').scrollIntoView());
  await page.screenshot({ path: join(out, `learn-lesson-${size}.png`) });
  // The graph, stepping: op 13 (a recomputation) of rotor at 572 MiB.
  await page.locator('#graph-next').click();
  for (let i = 0; i < 12; i++) await page.locator('#graph-next').click();
  await page.evaluate(() => document.querySelector('#learn-graph').scrollIntoView());
  await page.screenshot({ path: join(out, `learn-graph-${size}.png`) });
  await page.locator('#graph-prev').click();
  // The strategies raced, caught mid-race.
  await page.locator('#classic-four').click();
  await page.locator('#side-optimal').waitFor();
  await page.locator('#side-race').click();
  await page.waitForTimeout(2500);
  await page.locator('#side-race').click();
  await page.evaluate(() => document.querySelector('#side-by-side').scrollIntoView());
  await page.screenshot({ path: join(out, `learn-race-${size}.png`) });
  // Both guesses, revealed.
  for (const l of [3, 6, 8]) await page.locator(`.guess-stage[data-stage="${l}"]`).click();
  await page.locator('#guess-reveal').click();
  await page.locator('#double-slider').fill('300');
  await page.locator('#double-reveal').click();
  await page.evaluate(() => document.querySelector('#your-guess').scrollIntoView());
  await page.screenshot({ path: join(out, `learn-guesses-${size}.png`) });
  errors.push(...e);
  await page.close();
  // The presentation, step by step, each answer shown.
  const p = (await open(context, '#lesson=1&present=1')).page;
  await p.setViewportSize({ width: w, height: h });
  for (let step = 1; step <= 5; step++) {
    await p.waitForFunction((s) => document.querySelector('#lesson').dataset.step === String(s), step);
    await waitForPlan(p);
    await p.waitForFunction(() => !document.querySelector('main').classList.contains('stale'), null, { timeout: 60000 });
    await p.waitForTimeout(600);
    await p.locator('#lesson-reveal').click();
    await p.screenshot({ path: join(out, `present-${step}-${size}.png`) });
    console.log(`step ${step}: ${await p.locator('#lesson-answer').textContent()}`);
    await p.keyboard.press('PageDown');
  }
  await p.close();
}
console.log(errors.length ? `page errors: ${errors.join('\n')}` : 'no page errors');
await context.close();
