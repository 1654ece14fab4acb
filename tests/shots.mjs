// Screenshots for review (not a test):
//   EXPLORER_URL=http://127.0.0.1:PORT/ node tests/shots.mjs OUT_DIR
// The dashboard at 1400×900 and 1024×768, the dashboard's exported PNG,
// the device-memory view, the scaled-example controls, and a measured run
// over the memory curve at 1366×768 and 1920×1080.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { launch, open, nextPlan, planId } from './helpers.mjs';

const out = process.argv[2] ?? '/tmp';
const context = await launch();
const { page, errors } = await open(context, '#chain=vgg19-h100&algorithm=rotor');
for (const [w, h] of [[1400, 900], [1024, 768]]) {
  await page.setViewportSize({ width: w, height: h });
  await page.waitForTimeout(400);
  await page.screenshot({ path: join(out, `dashboard-${w}x${h}.png`) });
  await page.screenshot({ path: join(out, `dashboard-${w}x${h}-full.png`), fullPage: true });
}
await page.setViewportSize({ width: 1400, height: 900 });
const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('#export-dashboard-png').click()]);
await dl.saveAs(join(out, 'export-dashboard.png'));

// The device-memory view: an 80 GB card, GPT-2 at batch 16 in mixed
// precision with Adam, its budget used.
const gpt = await open(context, '#chain=gpt2-h100-math&algorithm=rotor&batch=64');
await gpt.page.locator('#device-memory-toggle').check();
await gpt.page.selectOption('#weights-select', 'mixed');
const id = await planId(gpt.page);
await gpt.page.locator('#use-device-budget').click();
await nextPlan(gpt.page, id);
await gpt.page.locator('#device-memory-card').screenshot({ path: join(out, 'device-memory.png') });
await gpt.page.locator('#scale-controls').screenshot({ path: join(out, 'scale-controls.png') });
await gpt.page.screenshot({ path: join(out, 'dashboard-device-1400x900.png') });
// A measured run (the test fixture) over its plan's memory curve.
const run = await open(context, '#chain=gpt2-cpu-torch&algorithm=rotor&budget=30000000');
await run.page.locator('#import-run-input').setInputFiles({
  name: 'run-gpt2-cpu-torch-rotor-30MB.json', mimeType: 'application/json',
  buffer: readFileSync(new URL('./fixtures/run-gpt2-cpu-torch-rotor-30MB.json', import.meta.url)),
});
await run.page.locator('#measured-summary').waitFor();
for (const [w, h] of [[1366, 768], [1920, 1080]]) {
  await run.page.setViewportSize({ width: w, height: h });
  await run.page.waitForTimeout(400);
  await run.page.locator('#memory-svg').evaluate((el) => el.closest('section').scrollIntoView({ block: 'center' }));
  await run.page.waitForTimeout(200);
  await run.page.screenshot({ path: join(out, `run-overlay-${w}.png`) });
}
errors.push(...run.errors);
writeFileSync(join(out, 'shots.txt'), `link: ${await gpt.page.evaluate(() => location.href)}\nerrors: ${JSON.stringify([...errors, ...gpt.errors])}\n`);
console.log('errors:', [...errors, ...gpt.errors]);
await context.close();
