// A student who follows a course link on a phone (390×844, issue 45 item
// 2): the page is no wider than the screen (no sideways scroll), the budget
// field and the slider are on screen and usable, and a lesson link shows
// its question. How it could fail: a grid or a table wider than the screen
// (the budget bar's three columns, the Compare table: the page was 584 px
// wide before this change, its budget field cut at the right edge).
// Mutation run: the phone rules in main.css removed → both tests fail (the
// page 24 521 px wide: the pipeline table and the Code card's long line
// widen it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, open } from './helpers.mjs';

let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

const PHONE = { width: 390, height: 844 };

async function fitsTheScreen(page, view) {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  const wide = await page.evaluate((w) => [...document.querySelectorAll('body *')]
    .filter((e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.right > w + 1 && !e.closest('#compare-table, pre'); })
    .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''} ends at ${Math.round(e.getBoundingClientRect().right)}`), PHONE.width);
  assert.ok(width <= PHONE.width, `${view}: the page is ${width} px wide in a ${PHONE.width} px screen (${wide.join(', ')})`);
}

test('on a phone the page fits the screen and its budget is in reach', async () => {
  const { page, errors } = await open(context);
  await page.setViewportSize(PHONE);
  await page.waitForTimeout(500);
  await fitsTheScreen(page, 'the first screen');
  const field = await page.locator('#budget-input').boundingBox();
  assert.ok(field.x >= 0 && field.x + field.width <= PHONE.width, `budget field at ${field.x}…${field.x + field.width}`);
  const slider = await page.locator('#budget-slider').boundingBox();
  assert.ok(slider.width >= 200, `slider ${slider.width} px wide`);
  // Every place, once scrolled to, fits as well.
  for (const place of ['place-compare', 'place-gpu', 'place-learn', 'place-chain']) {
    await page.locator(`[data-place="${place}"]`).click();
    await page.waitForTimeout(300);
    await fitsTheScreen(page, place);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

// The figures on a phone (issue 45 item 2: their words were 3 px, drawn
// 1200 units across 330 px; the sticky bar, wrapped to about 410 px, hid
// half the screen). Each chart is drawn at least 720 px wide in a card
// that scrolls sideways, its words 1.55x larger, and nothing covers it.
// How it could fail: a chart shrunk to the screen again, words not
// enlarged, the bar sticky. Mutations run: PHONE_TEXT 1.0 → 'chain-svg:
// "↻1" at 6.6 px'; the bar sticky again → "chain-svg is covered by
// HEADER top".
//
// The other figures (Compare's curves, the pipeline, Learn's graph) were
// drawn to the screen's width: words of 2.7–7.8 px. Mutation run: their
// phone rules in main.css removed → 'curves-svg: "0 %" at 6.1 px'.
test('on a phone the figures are read without zooming, and nothing covers them', async () => {
  const { page, errors } = await open(context, '#chain=vgg19');
  await page.setViewportSize(PHONE);
  await page.waitForTimeout(800);
  for (const id of ['chain-svg', 'memory-svg', 'timeline-svg', 'curves-svg', 'pipeline-svg', 'graph-svg']) {
    await page.locator(`#${id}`).scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    // A word's size on screen: its font size times the scale the figure
    // is drawn at (rotated words too: the scale is the transform's norm).
    const words = await page.evaluate((id) => [...document.querySelectorAll(`#${id} text`)]
      .filter((t) => t.getBoundingClientRect().width > 0)
      .map((t) => { const m = t.getScreenCTM(); return { px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b), text: t.textContent }; }), id);
    assert.ok(words.length >= 5, `${id}: ${words.length} words`);
    const smallest = words.reduce((a, b) => (b.px < a.px ? b : a));
    assert.ok(smallest.px >= 10, `${id}: "${smallest.text}" at ${smallest.px.toFixed(1)} px`);
    // Scrolled to the top of the screen, the chart's top is the chart,
    // not a bar over it.
    const covered = await page.evaluate(async (id) => {
      const svg = document.getElementById(id);
      svg.scrollIntoView({ block: 'start' });
      await new Promise((r) => requestAnimationFrame(r));
      const r = svg.getBoundingClientRect();
      const hit = document.elementFromPoint(innerWidth / 2, r.top + 20);
      return hit && svg.contains(hit) ? null : `${hit?.tagName} ${hit?.className?.baseVal ?? hit?.className}`;
    }, id);
    assert.equal(covered, null, `${id} is covered by ${covered}`);
  }
  await fitsTheScreen(page, 'the figures');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a lesson link on a phone shows the lesson and fits the screen', async () => {
  const page = await context.newPage();
  await page.setViewportSize(PHONE);
  await page.goto(new URL('#lesson=2', process.env.EXPLORER_URL ?? 'http://127.0.0.1:8080/').href);
  await page.waitForSelector('#lesson .lesson-question', { timeout: 60000 });
  await page.waitForTimeout(800);
  await fitsTheScreen(page, 'lesson 2');
  const question = page.locator('#lesson .lesson-question');
  const box = await question.boundingBox();
  assert.ok(box && box.y >= 0 && box.y < PHONE.height, `the lesson's question is on screen (${JSON.stringify(box)})`);
  await page.close();
});
