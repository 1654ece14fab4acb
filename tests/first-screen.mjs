// The first screen, counted as issue 26 counts it, and screenshots:
//   EXPLORER_URL=http://127.0.0.1:PORT/ node tests/first-screen.mjs OUT_DIR
// A control is a visible, enabled or disabled, <button>, <input>, <select>,
// <summary> or link whose box starts above the fold; words are the visible
// words of the page's text outside its SVG figures and the welcome.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { launch, open } from './helpers.mjs';
import { firstScreen } from './first-screen-count.mjs';

const out = process.argv[2] ?? '/tmp';
const context = await launch();
const lines = [];
for (const [w, h, hash] of [
  [1366, 768, ''], [1920, 1080, ''], [1920, 1080, 'large'], [1280, 720, ''], [1280, 720, 'large'],
]) {
  const { page } = await open(context, '');
  await page.setViewportSize({ width: w, height: h });
  if (hash === 'large') await page.locator('#large-type').click();
  await page.waitForTimeout(500);
  const c = await firstScreen(page);
  lines.push(`${w}x${h}${hash}: ${c.controls.length} controls, ${c.words} words; figures: ${JSON.stringify(c.figures)}`);
  lines.push(`  controls: ${c.controls.join(' | ')}`);
  const name = `first-${w}x${h}${hash ? '-large' : ''}.png`;
  await page.screenshot({ path: join(out, name) });
  await page.screenshot({ path: join(out, name.replace('.png', '-full.png')), fullPage: true });
  if (hash === 'large') await page.locator('#large-type').click();
  await page.close();
}
writeFileSync(join(out, 'first-screen.txt'), lines.join('\n') + '\n');
console.log(lines.join('\n'));
await context.close();
