// Learn's graph saved as a GIF (issue 27, point 6): on the teaching chain
// at the guide's tight budget (rotor at 572 MiB, recomputing), "Save as
// GIF" shows its progress, then downloads a GIF that an independent
// decoder (Pillow) reads as one frame per operation of the schedule (the
// count from `remat solve --json`, not from the page), looping forever,
// 1200 pixels wide, each frame shown for the chosen playback speed and the
// last held longer; a recomputation's frame differs from the first and
// from the frame before it. A schedule over 120 operations keeps every
// k-th one and says so; Cancel stops the GIF before it downloads. Run through scripts/browser-tests.sh (Pillow
// from .tools/pydeps, which scripts/setup-python.sh installs).
//
// How it fails: a frame dropped or doubled, a GIF that plays once, frames
// that are all the same picture (the cursor not moved between frames), a
// delay that ignores the speed, no last-frame hold, a page error.
// Mutation tried: `plan.ops.iter().skip(1)` in io/gif.rs's frame loop —
// "31 frames for 32 operations".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, open, importLongChain } from './helpers.mjs';

const CLI = process.env.REMAT_CLI ?? new URL('../target/release/remat', import.meta.url).pathname;
const PYDEPS = new URL('../.tools/pydeps', import.meta.url).pathname;
const BUDGET = 599785472;
const TEACHING = `#chain=teaching&algorithm=rotor&budget=${BUDGET}&bandwidth=12000000000`;

let context;
before(async () => { context = await launch(); });
after(async () => { await context?.close(); });

/// The schedule the CLI finds for the page's view: its ops and captions.
function cliSchedule() {
  const dir = mkdtempSync(join(tmpdir(), 'remat-gif-'));
  const file = join(dir, 'schedule.json');
  const args = ['example:teaching', '--bandwidth', '12000000000'];
  const solved = JSON.parse(execFileSync(CLI, ['solve', ...args, '-a', 'rotor', '-b', String(BUDGET), '--json', '-o', file], { encoding: 'utf8' }));
  const sim = JSON.parse(execFileSync(CLI, ['simulate', ...args, file, '--states', '--json'], { encoding: 'utf8' }));
  return { ops: solved.ops.length, captions: sim.states.map((s) => s.caption) };
}

/// What Pillow reads in the GIF at `path`: frame count, loop, size, each
/// frame's duration, and which frames differ from which.
function decode(path, pairs) {
  const script = `
import json, sys
from PIL import Image, ImageChops, ImageSequence
im = Image.open(sys.argv[1])
frames = [f.convert('RGB') for f in ImageSequence.Iterator(im)]
durations = []
for i in range(im.n_frames):
    im.seek(i)
    durations.append(im.info.get('duration'))
im.seek(0)
pairs = json.loads(sys.argv[2])
differ = [ImageChops.difference(frames[a], frames[b]).getbbox() is not None for a, b in pairs]
print(json.dumps({'format': im.format, 'n_frames': im.n_frames, 'loop': im.info.get('loop'),
                  'size': list(im.size), 'durations': durations, 'differ': differ}))
`;
  const out = execFileSync('python3', ['-c', script, path, JSON.stringify(pairs)], {
    encoding: 'utf8', env: { ...process.env, PYTHONPATH: PYDEPS },
  });
  return JSON.parse(out);
}

test('Save as GIF: one looping frame per operation, at the chosen speed', async () => {
  const { ops, captions } = cliSchedule();
  assert.equal(captions.length, ops);
  const recompute = captions.findIndex((c) => /recomputed/.test(c));
  assert.ok(recompute > 1, `a recomputation among ${ops} ops (${captions.join(' | ')})`);

  const { page, errors } = await open(context, TEACHING);
  await page.locator('button[data-place="place-learn"]').click();
  await page.locator('#graph-gif').scrollIntoViewIfNeeded();
  // 10 ops/s: 10 cs a frame.
  await page.locator('#graph-speed').selectOption('10');
  const title = await page.locator('#graph-gif').getAttribute('title');
  assert.match(title, new RegExp(`all ${ops} ops`), title);

  const downloading = page.waitForEvent('download', { timeout: 120000 });
  await page.locator('#graph-gif').click();
  // Progress is shown while it draws (the last frame's count at least).
  await page.locator('#graph-gif-progress').waitFor({ timeout: 10000 });
  assert.match(await page.locator('#graph-gif-progress').textContent(), new RegExp(`frame \\d+ / ${ops}`));
  const download = await downloading;
  assert.equal(download.suggestedFilename(), 'teaching-chain.rotor.graph.gif');
  const file = join(mkdtempSync(join(tmpdir(), 'remat-gif-')), 'graph.gif');
  await download.saveAs(file);
  // The button is back once the file is out.
  await page.locator('#graph-gif').waitFor();

  const gif = decode(file, [[0, recompute], [recompute - 1, recompute], [0, 1]]);
  assert.equal(gif.format, 'GIF');
  assert.equal(gif.n_frames, ops, `${gif.n_frames} frames for ${ops} operations`);
  assert.equal(gif.loop, 0, 'loops forever (NETSCAPE2.0, count 0)');
  assert.equal(gif.size[0], 1200);
  assert.ok(gif.size[1] > 250 && gif.size[1] < 700, `height ${gif.size[1]}`);
  assert.deepEqual(gif.durations.slice(0, -1), Array(ops - 1).fill(100), 'each frame 1/10 s');
  assert.ok(gif.durations.at(-1) >= 2000, `the last frame held: ${gif.durations.at(-1)} ms`);
  assert.deepEqual(gif.differ, [true, true, true], `frames 0/${recompute}, ${recompute - 1}/${recompute}, 0/1 differ`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a long schedule: the GIF keeps every k-th op and says so; Cancel stops it, nothing downloads', async () => {
  const { page, errors } = await open(context);
  await importLongChain(page, 80);
  await page.locator('button[data-place="place-learn"]').click();
  // Over 120 ops: the note and the button's title say which ops are kept.
  const note = page.locator('.graph-gif-note');
  await note.waitFor();
  assert.match(await note.textContent(), /every \d+(st|nd|rd|th) op of \d+ \(\d+ frames\)/);
  const frames = Number((await note.textContent()).match(/\((\d+) frames\)/)[1]);
  assert.ok(frames <= 120, `${frames} frames`);
  let downloads = 0;
  page.on('download', () => { downloads++; });
  await page.locator('#graph-gif').scrollIntoViewIfNeeded();
  await page.locator('#graph-gif').click();
  await page.locator('#graph-gif-cancel').click();
  await page.locator('#graph-gif').waitFor({ timeout: 30000 });
  assert.equal(await page.locator('#graph-gif-progress').count(), 0);
  await page.waitForTimeout(500);
  assert.equal(downloads, 0, 'a cancelled GIF downloads nothing');
  assert.deepEqual(errors, []);
  await page.close();
});
