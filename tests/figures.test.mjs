// Browser tests of the figures (issue 13, points 6 and 9): every figure and
// the dashboard saved as SVG and PNG with title, legend, chain, algorithm
// and budget; recomputation counts of thin stages never dropped; the sweep
// and compare curves with read-outs, current-budget markers and a dash and
// marker per algorithm. Run through scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { launch, open, nextPlan, planId, text, algorithmNames, OFFLOADING, importLongChain } from './helpers.mjs';

let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

/// Clicks `sel` and returns the downloaded file's name and bytes.
async function download(page, sel) {
  // A figure's buttons sit in its Save menu: open it first.
  await page.locator(sel).evaluate((el) => { const d = el.closest('details'); if (d) d.open = true; });
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator(sel).click()]);
  return { name: dl.suggestedFilename(), bytes: readFileSync(await dl.path()) };
}

/// A PNG's size from its IHDR chunk, after checking the signature.
function pngSize(bytes) {
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  assert.equal(bytes.subarray(12, 16).toString('latin1'), 'IHDR');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/// Moves the budget slider to `value` (0 to 1000) and waits for the plan.
async function slide(page, value) {
  const id = await planId(page);
  await page.locator('#budget-slider').fill(String(value));
  await nextPlan(page, id, 20000);
}

// Fails if a saved figure lacks its title, the chain, the algorithm, the
// budget shown on the page or a legend label, if the PNG is not a PNG at 2×
// the figure's width, or if the dashboard leaves out a figure. Mutation
// tried: the context line left out of the composed SVG (the test
// failed at the chain name, its first check).
test('each figure and the dashboard save as SVG and PNG, ready for a slide', async () => {
  const { page, errors } = await open(context, '#chain=vgg19&algorithm=rotor');
  await slide(page, 500);
  const budget = (await page.locator('#budget-input').inputValue()).trim();
  const legends = {
    chain: ['kept (F', 'checkpointed input', 'recomputations'],
    memory: ['saved for backward', 'gradient', 'budget'],
    timelines: ['forward', 'recompute', 'backward', 'prefetch', 'GPU idle'],
    compare: ['store-all', 'sequential', 'revolve', 'rotor'],
  };
  for (const [figure, labels] of Object.entries(legends)) {
    const svg = await download(page, `#export-${figure}-svg`);
    assert.equal(svg.name, `vgg-19-batch-32-224-px-analytic.rotor.${figure}.svg`);
    const doc = svg.bytes.toString('utf8');
    assert.match(doc, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.match(doc, /class="figure-title"/, figure);
    assert.ok(doc.includes('VGG-19, batch 32'), `${figure}: chain name`);
    assert.ok(doc.includes(' · rotor · '), `${figure}: algorithm`);
    assert.ok(doc.includes(`budget ${budget}`), `${figure}: budget ${budget}`);
    for (const l of labels) assert.ok(doc.includes(l), `${figure}: legend ${l}`);
    // The chart itself is inside, drawn as on the page.
    const inner = { chain: 'chain-svg', memory: 'memory-svg', timelines: 'timeline-svg', compare: 'curves-svg' }[figure];
    assert.ok(doc.includes(`id="${inner}"`), `${figure}: the chart`);
    // The chart uses the figure's width (the compare curves filled half of
    // it before issue 26; mutation tried: nested_chart capped at the
    // chart's own width — compare's chart was 640 of 1200).
    const nestedWidth = Number(/<svg x="[\d.]+" y="[\d.]+" width="([\d.]+)"/.exec(doc)[1]);
    assert.ok(nestedWidth >= 1100, `${figure}: the chart ${nestedWidth} wide in a 1200 figure`);
    const png = await download(page, `#export-${figure}-png`);
    assert.match(png.name, new RegExp(`\\.${figure}\\.png$`));
    const { width, height } = pngSize(png.bytes);
    assert.equal(width, 2400, `${figure}: 2× the 1200-unit figure`);
    assert.ok(height > 400 && height < 2400, `${figure}: height ${height}`);
    assert.ok(png.bytes.length > 10000, `${figure}: ${png.bytes.length} bytes, more than a blank image`);
  }
  const dash = await download(page, '#export-dashboard-svg');
  const doc = dash.bytes.toString('utf8');
  for (const title of ['Layer chain', 'Memory over time', 'Timelines', 'Overhead against the memory budget']) {
    assert.ok(doc.includes(title), `dashboard: ${title}`);
  }
  assert.equal((doc.match(/class="figure-title"/g) ?? []).length, 4, 'no sweep drawn yet: four figures');
  const png = await download(page, '#export-dashboard-png');
  const size = pngSize(png.bytes);
  assert.equal(size.width, 2400);
  assert.ok(size.height > 2400, `dashboard height ${size.height}: the figures stacked`);
  assert.deepEqual(errors, []);
  await page.close();
});

// Fails if a recomputed stage too thin for its ↻ label loses it (the sum of
// the labels would fall short of the stats' count), if a recomputed box has
// no hover title, or if two outside labels overlap. Mutation tried: the old
// rule (a label only on boxes at least 14 units wide): the labels' sum fell
// short of the stats' count at the first budget tried.
test('thin stages keep their recomputation count: an outside label and a hover', async () => {
  const { page, errors } = await open(context, '#chain=vgg19&algorithm=rotor');
  let outsides = 0;
  for (const v of [50, 200, 300, 500]) {
    await slide(page, v);
    const stat = Number(await text(page, '#stat-recomputations'));
    const got = await page.evaluate(() => ({
      rects: [...document.querySelectorAll('#chain-svg rect.recomputed')].map((r) => ({
        stage: r.dataset.stage, count: Number(r.dataset.count), title: r.querySelector('title')?.textContent ?? '',
      })),
      labels: [...document.querySelectorAll('#chain-svg .recompute-label')].map((t) => {
        const b = t.getBBox();
        return { stage: t.dataset.stage, text: t.textContent, outside: t.classList.contains('outside'), box: [b.x, b.y, b.width, b.height] };
      }),
      total: document.querySelector('#chain-recompute-total')?.dataset.count,
    }));
    assert.ok(stat > 0, `slider ${v}: a budget with recomputations`);
    assert.equal(got.rects.reduce((s, r) => s + r.count, 0), stat, `slider ${v}: hover counts`);
    assert.equal(got.labels.reduce((s, l) => s + Number(l.text.replace('↻', '')), 0), stat, `slider ${v}: labels`);
    assert.equal(Number(got.total), stat);
    const stages = (xs) => xs.map((x) => Number(x.stage)).sort((a, b) => a - b);
    assert.deepEqual(stages(got.labels), stages(got.rects), 'one label per recomputed stage');
    for (const r of got.rects) assert.equal(r.title, `stage ${r.stage}: recomputed ${r.count}× in the backward phase`);
    const out = got.labels.filter((l) => l.outside);
    outsides += out.length;
    for (let i = 0; i < out.length; i++) {
      for (let j = i + 1; j < out.length; j++) {
        const [a, b] = [out[i].box, out[j].box];
        const overlap = a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];
        assert.ok(!overlap, `slider ${v}: labels of stages ${out[i].stage} and ${out[j].stage} overlap`);
      }
    }
  }
  assert.ok(outsides > 0, 'vgg19 has stages too thin for an inside label');
  assert.deepEqual(errors, []);
  await page.close();
});

// Fails if a 300-stage chain's recomputation counts spill off the chain's
// card (issue 26: labels and leader lines ran past its right edge), or if
// the aggregated bars lose a count (their sum with the inline labels must
// be the stats' count). Tried against the page before the bars (labels
// only): "line at 536…1203 inside 0…1200" — a leader line past the edge.
test('a 300-stage chain keeps its recomputation counts inside its card', async () => {
  const { page, errors } = await open(context, '#chain=vgg19&algorithm=rotor');
  await importLongChain(page, 300);
  await slide(page, 40);
  const stat = Number(await text(page, '#stat-recomputations'));
  const got = await page.evaluate(() => {
    const svg = document.querySelector('#chain-svg');
    const width = svg.viewBox.baseVal.width;
    const items = [...svg.querySelectorAll('.recompute-label, .recompute-bar, line')].map((el) => {
      const b = el.getBBox();
      return { cls: el.getAttribute('class') ?? 'line', left: b.x, right: b.x + b.width };
    });
    return {
      width,
      items,
      labels: [...svg.querySelectorAll('.recompute-label')].reduce((s, t) => s + Number(t.textContent.replace('↻', '')), 0),
      bars: [...svg.querySelectorAll('.recompute-bar')].reduce((s, r) => s + Number(r.dataset.count), 0),
    };
  });
  assert.ok(stat > 50, `a budget with many recomputations: ${stat}`);
  for (const it of got.items) {
    assert.ok(it.left >= 0 && it.right <= got.width + 0.5, `${it.cls} at ${it.left.toFixed(0)}…${it.right.toFixed(0)} inside 0…${got.width}`);
  }
  assert.equal(got.labels + got.bars, stat, 'labels and bars together give every recomputation');
  assert.ok(got.bars > 0, 'thin boxes aggregated into bars');
  assert.deepEqual(errors, []);
  await page.close();
});

// Fails if the budget marker stays put when the slider moves, if two
// algorithms share a dash and a marker (a line hidden under another could
// not be told apart), or if the read-out does not name every algorithm.
// Mutation tried: rotor's dash set to pofo's (the sweep's distinct-dash
// check failed).
test('sweep and compare curves: a marker at the budget, a dash per algorithm, hover read-outs', async () => {
  const { page, errors } = await open(context, '#chain=teaching&algorithm=rotor&bandwidth=12000000000');
  // The compare curves.
  const x1 = () => page.locator('#curves-budget-marker').getAttribute('x1');
  await slide(page, 200);
  const before = Number(await x1());
  await slide(page, 800);
  assert.ok(Number(await x1()) > before + 50, 'the budget marker follows the slider');
  // The optimal curve comes from the worker, after the page's tables.
  await page.locator('#curves-svg path.alg-line[data-algorithm="optimal"]').waitFor({ state: 'attached' });
  await page.locator('#curves-svg').scrollIntoViewIfNeeded();
  const box = await page.locator('#curves-svg').boundingBox();
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5);
  const rows = await page.locator('#curves-readout .readout-row').allTextContents();
  // Every algorithm but the offloading ones, in the core's order.
  const curved = algorithmNames().filter((n) => !OFFLOADING.includes(n));
  assert.deepEqual(curved.slice(0, 5), ['store-all', 'recompute-all', 'sequential', 'revolve', 'rotor']);
  assert.deepEqual(rows.map((r) => r.split(':')[0]), curved);
  assert.ok(rows.every((r) => /: ([+-]?\d+\.\d %|0 %|no schedule)$/.test(r)), rows.join(' | '));
  const styles = async (sel) => page.$$eval(`${sel} path.alg-line`, (ps) => ps.map((p) => `${p.dataset.algorithm} ${p.getAttribute('stroke-dasharray')}`));
  const curves = await styles('#curves-svg');
  assert.equal(new Set(curves.map((s) => s.split(' ').slice(1).join(' '))).size, curves.length, curves.join(' | '));
  // The sweep.
  await page.locator('#sweep-run').click();
  await page.locator('#sweep-alpha').waitFor({ timeout: 120000 });
  const sweep = await styles('#sweep-alpha');
  assert.deepEqual(sweep.map((s) => s.split(' ')[0]), ['rotor', 'pofo', 'offload-only', 'opportunist', 'autocapper']);
  assert.equal(new Set(sweep.map((s) => s.split(' ').slice(1).join(' '))).size, 5, sweep.join(' | '));
  // The legend draws each line's dash.
  const keys = await page.$$eval('.sweep .line-swatch line', (ls) => ls.map((l) => l.getAttribute('stroke-dasharray')));
  assert.deepEqual(keys, sweep.map((s) => s.split(' ').slice(1).join(' ')));
  const ax = () => page.locator('#sweep-alpha-marker').getAttribute('x1');
  const a0 = Number(await ax());
  await slide(page, 300);
  const a1 = Number(await ax());
  assert.ok(a1 < a0 - 50, `the α marker moves with the slider: ${a0} → ${a1}`);
  assert.match(await page.locator('#sweep-alpha').textContent(), /α = 0\.\d\d/);
  const bx = await page.locator('#sweep-beta-marker').getAttribute('x1');
  assert.ok(Number(bx) > 60, 'the bandwidth marker is on the β axis');
  await page.locator('#sweep-alpha').scrollIntoViewIfNeeded();
  const sb = await page.locator('#sweep-alpha').boundingBox();
  await page.mouse.move(sb.x + sb.width * 0.9, sb.y + sb.height * 0.5);
  const sweepRows = await page.locator('#sweep-alpha-readout .readout-row').allTextContents();
  assert.equal(sweepRows.length, 5, sweepRows.join(' | '));
  await algorithmsInAPaletteOfTheirOwn(page);
  assert.match(await page.locator('#sweep-alpha-readout text').first().textContent(), /α = 0\.9/);
  // The sweep's figure saves too, both panels and its legend.
  const svg = await download(page, '#export-sweep-svg');
  const doc = svg.bytes.toString('utf8');
  for (const s of ['id="sweep-alpha"', 'id="sweep-beta"', 'offload-only', 'autocapper', 'teaching chain', ' · rotor · ']) {
    assert.ok(doc.includes(s), `sweep figure: ${s}`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

/// A colour's coordinates in OKLab (Björn Ottosson's), where the distance
/// between two colours is about how different a reader sees them.
function oklab(hex) {
  const lin = (c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  const [r, g, b] = [1, 3, 5].map((i) => lin(parseInt(hex.slice(i, i + 2), 16) / 255));
  const [l, m, s] = [
    0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b,
    0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b,
    0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b,
  ].map(Math.cbrt);
  return [
    0.2104542553 * l + 0.793617785 * m - 0.0040720468 * s,
    1.9779984951 * l - 2.428592205 * m + 0.4505937099 * s,
    0.0259040371 * l + 0.7827717662 * m - 0.808675766 * s,
  ];
}
const deltaE = (a, b) => Math.hypot(...oklab(a).map((x, i) => x - oklab(b)[i]));

// Algorithms in a palette of their own (issue 45: "Compare and Max batch
// reuse the operation colours for algorithms" — pofo's orange was 0.036
// from F_∅'s vermilion, hong-chen's gold from F_ck's orange). Fails if an
// algorithm's line (the curves and the sweep draw all sixteen) is closer
// than 0.12 in OKLab to a colour of the page's legend (the ops and
// tensors) or to the budget marker's red, or two algorithms closer than
// 0.11 to each other. Mutation tried: pofo back to #e8590c — "pofo
// #e8590c is 0.036 from the legend's F∅ nothing kept #d55e00".
async function algorithmsInAPaletteOfTheirOwn(page) {
  const lines = await page.$$eval('#curves-svg path.alg-line, #sweep-alpha path.alg-line',
    (ps) => ps.map((p) => [p.dataset.algorithm, p.getAttribute('stroke').toLowerCase()]));
  const algs = new Map(lines);
  // The dynamic runtimes draw no curve: their colour is the Compare
  // table's dot, which must be the line's where both are drawn.
  const dots = await page.$$eval('#compare-table tr', (rows) => rows
    .map((r) => [r.querySelector('td')?.textContent.trim(), r.querySelector('i.dot')])
    .filter(([, i]) => i)
    .map(([name, i]) => [name, '#' + getComputedStyle(i).backgroundColor.match(/\d+/g).slice(0, 3)
      .map((x) => Number(x).toString(16).padStart(2, '0')).join('')]));
  for (const [alg, c] of dots) {
    if (algs.has(alg)) assert.equal(c, algs.get(alg), `${alg}: the table's dot and its line`);
    algs.set(alg, c);
  }
  assert.deepEqual([...algs.keys()].sort(), algorithmNames().sort(), 'every algorithm drawn');
  const others = await page.evaluate(() => {
    const hex = (css) => '#' + css.match(/\d+/g).slice(0, 3).map((x) => Number(x).toString(16).padStart(2, '0')).join('');
    const out = [...document.querySelectorAll('#page-legend .swatch')]
      .map((s) => [s.textContent.trim(), s.querySelector('i')])
      .filter(([, i]) => i && !i.className)
      .map(([label, i]) => [`the legend's ${label}`, hex(getComputedStyle(i).backgroundColor)]);
    out.push(['the budget marker', document.querySelector('#curves-budget-marker').getAttribute('stroke').toLowerCase()]);
    return out;
  });
  assert.ok(others.length >= 8, `the legend's colours: ${others}`);
  for (const [alg, c] of algs) {
    for (const [what, o] of others) {
      const d = deltaE(c, o);
      assert.ok(d >= 0.12, `${alg} ${c} is ${d.toFixed(3)} from ${what} ${o}`);
    }
    for (const [alg2, c2] of algs) {
      if (alg < alg2) assert.ok(deltaE(c, c2) >= 0.11, `${alg} ${c} and ${alg2} ${c2}: ${deltaE(c, c2).toFixed(3)}`);
    }
  }
}

/// The time window a chart shows, from its data attributes (seconds).
async function windowOf(page, sel) {
  return page.$eval(sel, (el) => [Number(el.dataset.t0), Number(el.dataset.t1)]);
}

// Fails if a plain wheel over a chart zooms instead of scrolling the page
// (issue 26: a lecture scrolled past a chart stuck on it; mutation tried:
// the modifier check removed — the window narrowed and the page did not
// scroll), if Ctrl + wheel does not zoom (the window would keep its width), if
// the memory chart and the timelines show different windows, if the zoom
// is not around the pointer, if a drag does not pan, or if reset does not
// bring back the whole step. Mutation tried: each chart zoomed in its own
// window (the timelines' window moved, the memory chart's did not: the
// "same range" check failed).
test('a plain wheel scrolls the page; Ctrl + wheel zooms timelines and memory curve, a drag pans, reset, in sync', async () => {
  const { page, errors } = await open(context, '#chain=vgg19&algorithm=rotor');
  await slide(page, 300);
  const makespanText = await text(page, '#stat-makespan');
  const [t0, t1] = await windowOf(page, '#timeline-svg');
  assert.equal(t0, 0);
  assert.ok(t1 > 0);
  assert.deepEqual(await windowOf(page, '#memory-svg'), [t0, t1]);
  assert.ok(await page.locator('#zoom-reset-timelines').isDisabled());
  // Three notches up at 3/4 of the timeline's width.
  await page.locator('#timeline-svg').scrollIntoViewIfNeeded();
  const box = await page.locator('#timeline-svg').boundingBox();
  const px = box.x + box.width * 0.75;
  await page.mouse.move(px, box.y + box.height * 0.3);
  // A plain wheel scrolls the page and leaves the window alone.
  const scrolled = await page.evaluate(() => window.scrollY);
  await page.mouse.wheel(0, 120);
  await page.waitForFunction((y) => window.scrollY !== y, scrolled);
  assert.deepEqual(await windowOf(page, '#timeline-svg'), [t0, t1], 'a plain wheel does not zoom');
  await page.locator('#timeline-svg').scrollIntoViewIfNeeded();
  const box2 = await page.locator('#timeline-svg').boundingBox();
  Object.assign(box, box2);
  await page.mouse.move(px, box.y + box.height * 0.3);
  await page.keyboard.down('Control');
  for (let i = 0; i < 3; i++) {
    await page.mouse.wheel(0, -100);
    await page.waitForTimeout(50);
  }
  await page.keyboard.up('Control');
  await page.waitForFunction(() => Number(document.querySelector('#timeline-svg').dataset.t0) > 0);
  const [z0, z1] = await windowOf(page, '#timeline-svg');
  assert.ok(Math.abs((z1 - z0) / (t1 - t0) - 0.512) < 1e-6, `0.8³ of the step: ${z0} … ${z1}`);
  assert.deepEqual(await windowOf(page, '#memory-svg'), [z0, z1], 'both charts show the same range');
  // Around the pointer: the time under it stays put.
  // (The pointer is at 3/4 of the chart's 1200 units; the plot starts at 78
  // and is 1106 wide; the browser rounds the pointer to whole pixels: 2 px.)
  const under = (w) => w[0] + ((0.75 * 1200 - 78) / 1106) * (w[1] - w[0]);
  assert.ok(Math.abs(under([z0, z1]) - under([t0, t1])) < (t1 - t0) * 2 / box.width, `zoomed around the pointer: ${under([t0, t1])} → ${under([z0, z1])}`);
  assert.ok(await page.locator('#zoom-reset-memory').isEnabled());
  // The axis shows the zoomed range: its first tick is at or after z0.
  // A drag to the left moves the window later in the step.
  await page.mouse.move(px, box.y + box.height * 0.3);
  await page.mouse.down();
  await page.mouse.move(px - box.width * 0.2, box.y + box.height * 0.3, { steps: 4 });
  await page.mouse.up();
  const [p0, p1] = await windowOf(page, '#memory-svg');
  assert.ok(p0 > z0, `panned: ${z0} → ${p0}`);
  // The window's ends are written to 9 decimals: the two widths may differ
  // by up to 2e-9 in rounding alone (1.00000003e-9 on the exact table's plan).
  assert.ok(Math.abs((p1 - p0) - (z1 - z0)) < 3e-9, 'a pan keeps the width');
  assert.deepEqual(await windowOf(page, '#timeline-svg'), [p0, p1]);
  await page.locator('.app').screenshot({ path: process.env.FIGURES_SHOT ?? '/tmp/remat-zoomed.png' });
  await page.locator('#zoom-reset-memory').click();
  assert.deepEqual(await windowOf(page, '#timeline-svg'), [t0, t1]);
  assert.deepEqual(await windowOf(page, '#memory-svg'), [t0, t1]);
  assert.equal(await text(page, '#stat-makespan'), makespanText);
  assert.deepEqual(errors, []);
  await page.close();
});

// Fails if a figure computed on demand saves nothing, silently, before it is
// computed (issue 26: the sweep's and max batch's buttons did nothing): its
// Save menu must say so and its buttons be disabled, and once computed they
// work. (Against the page before: no Save menu, the locator timed out.)
test('a figure not computed yet says so in its Save menu', async () => {
  const { page, errors } = await open(context, '#chain=teaching&algorithm=rotor');
  for (const figure of ['sweep', 'maxbatch']) {
    await page.locator(`#save-${figure} summary`).click();
    assert.match(await text(page, `#save-${figure} .not-computed`), /not computed yet/);
    assert.ok(await page.locator(`#export-${figure}-svg`).isDisabled(), `${figure}: SVG disabled`);
    assert.ok(await page.locator(`#export-${figure}-png`).isDisabled(), `${figure}: PNG disabled`);
  }
  await page.locator('#maxbatch-batch').fill('1');
  await page.locator('#maxbatch-batch').dispatchEvent('change');
  await page.locator('#maxbatch-run').click();
  await page.waitForSelector('#maxbatch-svg g.maxbatch-row', { timeout: 60000 });
  assert.equal(await page.locator('#save-maxbatch .not-computed').count(), 0);
  const svg = await download(page, '#export-maxbatch-svg');
  assert.match(svg.name, /\.maxbatch\.svg$/);
  assert.ok(svg.name.length < 60, svg.name);
  assert.deepEqual(errors, []);
  await page.close();
});
