// Screenshots for review (not a test):
//   EXPLORER_URL=http://127.0.0.1:PORT/ node tests/shots-sizes.mjs OUT_DIR
// The three users' first screens at the three sizes the issues name (a
// phone 390×844, a student's laptop 1366×768, a projector 1920×1080): the
// default page, a lesson link, and the pipeline and Compare places.
import { join } from 'node:path';
import { launch, open, waitForPlan } from './helpers.mjs';

const out = process.argv[2] ?? '/tmp';
const context = await launch();
const errors = [];
for (const [w, h] of [[390, 844], [1366, 768], [1920, 1080]]) {
  const size = `${w}x${h}`;
  for (const [name, hash, place] of [
    ['first', '', null],
    ['lesson', '#lesson=2', null],
    ['pipeline', '#chain=gpt2&algorithm=rotor', '#pipeline-card'],
    ['compare', '#chain=vgg19&algorithm=rotor', '#place-compare'],
  ]) {
    const { page, errors: e } = await open(context, hash);
    await page.setViewportSize({ width: w, height: h });
    await waitForPlan(page);
    if (place) {
      await page.evaluate((p) => document.querySelector(p)?.scrollIntoView(), place);
      await page.waitForTimeout(800);
    }
    await page.screenshot({ path: join(out, `${name}-${size}.png`) });
    errors.push(...e);
    await page.close();
  }
}
console.log(errors.length ? `page errors: ${errors.join('\n')}` : 'no page errors');
await context.close();
