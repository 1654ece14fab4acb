// One meaning per colour (issue 26, point 3): the chain, the timelines, the
// memory curve and the legends give each kind of op and tensor one colour,
// an op and the tensor it leaves the same hue (F_all and ā, F_ck and a, B
// and δ), and no two meanings colours that look alike. Every view marks its
// paths with `data-kind`. Run through scripts/browser-tests.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, open, nextPlan, planId } from './helpers.mjs';

let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

/// The meaning a kind belongs to: an op and the tensor it leaves are one.
const MEANING = {
  F_all: 'F_all/ā', 'ā': 'F_all/ā', F_ck: 'F_ck/a', a: 'F_ck/a', 'F_∅': 'F_∅', B: 'B/δ', 'δ': 'B/δ',
  offload: 'offload', prefetch: 'prefetch', release: 'release', workspace: 'workspace',
};

/// kind → set of fills, for each view.
async function colours(page) {
  return page.evaluate(() => {
    const read = (sel) => {
      const out = {};
      for (const p of document.querySelectorAll(`${sel} path[data-kind]`)) {
        const k = p.dataset.kind;
        if (k === 'recompute' || k === 'unknown') continue;
        (out[k] ??= new Set()).add(p.getAttribute('fill').toLowerCase());
      }
      return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, [...v]]));
    };
    const legend = {};
    for (const s of document.querySelectorAll('#page-legend .swatch')) {
      const i = s.querySelector('i');
      if (!i || i.className) continue; // dashes, stripes, hatches: not a colour key
      const rgb = getComputedStyle(i).backgroundColor.match(/\d+/g).map(Number);
      legend[s.textContent.trim()] = '#' + rgb.map((x) => x.toString(16).padStart(2, '0')).join('');
    }
    return { chain: read('#chain-svg'), timeline: read('#timeline-svg'), memory: read('#memory-svg'), legend };
  });
}

const rgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
const distance = (a, b) => Math.hypot(...rgb(a).map((x, i) => x - rgb(b)[i]));

// Fails if a view colours a kind otherwise than another view (before issue
// 26 the timeline painted F_ck blue while the chain had it orange, and
// every re-forward vermilion), if an op and its tensor differ in hue, if a
// legend key differs from the views, or if two meanings get colours closer
// than 60 in RGB (ā's second shade was a light blue 42 from prefetch's:
// "light blue is prefetch in the legend but ā in the memory curve").
// Mutations tried: SAVED[1] back to #4d9bc9 — "#4d9bc9 (F_all/ā) and
// #56b4e9 (prefetch) look alike"; F_ck given FORWARD in `palette::of_kind`
// — "rotor 120: F_ck: chain #e69f00, timeline #0072b2".
test('each kind of op and tensor has one colour in every view and legend', async () => {
  const seen = {}; // meaning → fills
  const { page, errors } = await open(context, '#chain=vgg19&algorithm=rotor');
  const views = [];
  for (const [alg, slider] of [['rotor', 120], ['rotor', 450], ['pofo', 80]]) {
    const id = await planId(page);
    if ((await page.locator('#algorithm-select').inputValue()) !== alg) {
      await page.selectOption('#algorithm-select', alg);
      await nextPlan(page, id, 120000);
    }
    const id2 = await planId(page);
    await page.locator('#budget-slider').fill(String(slider));
    await nextPlan(page, id2, 120000);
    views.push({ at: `${alg} ${slider}`, ...(await colours(page)) });
  }
  const kinds = new Set();
  for (const v of views) {
    for (const view of ['chain', 'timeline', 'memory']) {
      for (const [k, fills] of Object.entries(v[view])) {
        kinds.add(k);
        assert.ok(MEANING[k], `${view}: unknown kind ${k}`);
        for (const f of fills) (seen[MEANING[k]] ??= new Set()).add(f);
      }
    }
    // The chain and the timelines: one fill per op kind, the same in both.
    for (const k of Object.keys(v.chain)) {
      if (v.timeline[k]) assert.deepEqual(v.chain[k], v.timeline[k], `${v.at}: ${k}: chain ${v.chain[k]}, timeline ${v.timeline[k]}`);
    }
    // An op and the tensor it leaves: the tensor's first shade is the op's.
    for (const [op, tensor] of [['F_all', 'ā'], ['F_ck', 'a'], ['B', 'δ']]) {
      if (v.timeline[op] && v.memory[tensor]) {
        assert.ok(v.memory[tensor].includes(v.timeline[op][0]), `${v.at}: ${tensor} ${v.memory[tensor]} against ${op} ${v.timeline[op]}`);
      }
    }
  }
  for (const k of ['F_all', 'F_ck', 'F_∅', 'B', 'ā', 'a', 'δ', 'offload', 'prefetch']) assert.ok(kinds.has(k), `${k} drawn somewhere`);
  // No two meanings alike.
  const all = Object.entries(seen).flatMap(([m, fills]) => [...fills].map((f) => [m, f]));
  for (const [m1, f1] of all) {
    for (const [m2, f2] of all) {
      if (m1 < m2) assert.ok(distance(f1, f2) >= 60, `${f1} (${m1}) and ${f2} (${m2}) look alike`);
    }
  }
  // The page's legend: each key's colour is its meaning's in the views.
  const legend = views[0].legend;
  for (const [label, meaning] of [['Fall', 'F_all/ā'], ['Fck', 'F_ck/a'], ['F∅', 'F_∅'], ['backward', 'B/δ'], ['offload', 'offload'], ['prefetch', 'prefetch']]) {
    const key = Object.keys(legend).find((l) => l.includes(label));
    assert.ok(key, `the legend names ${label}: ${Object.keys(legend)}`);
    assert.ok(seen[meaning].has(legend[key]), `legend "${key}" ${legend[key]} against ${[...seen[meaning]]}`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});
