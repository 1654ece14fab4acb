// Shared set-up for the browser tests: Debian's chromium driven by
// playwright-core (no browser download), one fresh profile per run.
import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BASE = process.env.EXPLORER_URL ?? 'http://127.0.0.1:8080/';

const FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/// A fresh browser profile. The first-visit welcome is marked as seen
/// (tests open their own views) unless `welcome` asks for a first visit.
export async function launch({ welcome = false } = {}) {
  const userDataDir = mkdtempSync(join(tmpdir(), 'remat-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: FLAGS,
    viewport: { width: 1400, height: 900 },
    acceptDownloads: true,
  });
  if (!welcome) {
    await context.addInitScript(() => {
      try { localStorage.setItem('remat-welcome-seen', '1'); } catch { /* no storage: no welcome either */ }
    });
  }
  return context;
}

/// Opens the page and collects page errors (uncaught exceptions, panics).
export async function open(context, hash = '') {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  await page.goto(BASE + hash);
  await waitForPlan(page);
  return { page, errors };
}

/// Waits until a schedule is shown (the stats are filled in), and for
/// pofo or offload-only its refinement: a quick answer from the table for
/// every budget (`data-plan-stage="quick"`) is followed by the per-budget
/// solve, which the tests compare with the CLI.
export async function waitForPlan(page, timeout = 60000) {
  await page.waitForFunction(() => {
    const m = document.querySelector('#stat-makespan');
    const quick = document.querySelector('.app')?.dataset.planStage === 'quick';
    return m && m.textContent.trim() !== '—' && m.textContent.trim() !== '' && !quick;
  }, null, { timeout });
}

/// Waits for the plan after the current one (the root carries its id), past
/// a quick answer (see waitForPlan).
export async function nextPlan(page, before, timeout = 60000) {
  await page.waitForFunction((b) => {
    const el = document.querySelector('.app');
    return el && Number(el.dataset.planId) > b && el.dataset.planStage !== 'quick';
  }, before, { timeout });
}

export async function planId(page) {
  return page.evaluate(() => Number(document.querySelector('.app').dataset.planId));
}

export function text(page, sel) {
  return page.locator(sel).innerText();
}

/// Imports `doc` as the JSON file `name` through the page's Import button.
export function importFile(page, name, doc) {
  return page.locator('#import-input').setInputFiles({
    name, mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(doc)),
  });
}

/// Imports a synthetic chain of `n` stages (its tables are built in the
/// worker) and waits for its first plan.
export async function importLongChain(page, n = 300, timeout = 120000) {
  await importFile(page, `synthetic-${n}.json`, syntheticChain(n));
  await page.waitForFunction((n) => document.querySelector('.chain-about').textContent.includes(`${n} stages`), n);
  await waitForPlan(page, timeout);
}

/// A chain of `n` stages in remat-chain/1, shaped like VGG blocks.
export function syntheticChain(n, name = `synthetic ${n}`) {
  const stages = [];
  for (let i = 0; i < n; i++) {
    const scale = 1 + (i % 7) / 3;
    const out = Math.round(64 * 2 ** 20 * scale / (1 + Math.floor(i / 60)));
    stages.push({
      name: `block ${i + 1}`,
      forward_seconds: 0.001 * (1 + (i % 5) / 4),
      backward_seconds: 0.002 * (1 + (i % 5) / 4),
      output_bytes: i === n - 1 ? 4 : out,
      saved_bytes: i === n - 1 ? 8 : out * 2,
    });
  }
  return { format: 'remat-chain/1', name, source: 'synthetic (tests)', input_bytes: 32 * 2 ** 20, stages };
}

/// The algorithms `remat algorithms` lists, in its order (the CLI and the
/// page read the same list from the core).
export function algorithmNames() {
  const cli = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
  return execFileSync(cli, ['algorithms'], { encoding: 'utf8' })
    .trim().split('\n').map((line) => line.split(/\s+/)[0]);
}

/// The four offloading algorithms (the compare curves leave them to the sweep).
export const OFFLOADING = ['pofo', 'offload-only', 'opportunist', 'autocapper', 'delta', 'delta-lru', 'delta-greedy'];
