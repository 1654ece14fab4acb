// Temporary: the same states on two builds, DOM and screenshots side by side.
import { launch } from './helpers.mjs';
import { writeFileSync } from 'node:fs';
const [urlA, urlB, out] = process.argv.slice(2);
const states = [
  ['default', ''],
  ['teaching-rotor', '#chain=teaching&algorithm=rotor&budget=600000000'],
  ['teaching-pofo', '#chain=teaching&algorithm=pofo&budget=600000000&bandwidth=12000000000'],
  ['resnet-revolve', '#chain=resnet50-h100&algorithm=revolve'],
];
const context = await launch();
for (const [name, hash] of states) {
  for (const [tag, base] of [['a', urlA], ['b', urlB]]) {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(base + hash);
    await page.waitForFunction(() => { const m = document.querySelector('#stat-makespan'); return m && m.textContent.trim() !== '—' && m.textContent.trim() !== ''; }, null, { timeout: 60000 });
    // Let the offloading compare rows land.
    await page.waitForFunction(() => !/solving in the worker/.test(document.querySelector('#compare-table').textContent), null, { timeout: 60000 });
    await page.waitForTimeout(500);
    if (name === 'teaching-rotor') {
      await page.locator('#step-next').click();
      await page.locator('#step-next').click();
      await page.locator('#sweep-run').click();
      await page.locator('#sweep-alpha').waitFor({ timeout: 60000 });
      await page.mouse.move(300, 300);
    }
    await page.waitForTimeout(300);
    const html = await page.evaluate(() => document.querySelector('.app').outerHTML.replace(/<!--[^>]*-->/g, ''));
    writeFileSync(`${out}/${name}-${tag}.html`, html.replace(/></g, '>\n<'));
    await page.screenshot({ path: `${out}/${name}-${tag}.png`, fullPage: true });
    if (errors.length) console.log(name, tag, 'errors', errors);
    await page.close();
  }
}
await context.close();
