// What a person sees on the first screen (above the fold), counted in the
// page: the controls they could use, the words they would read, and where
// the figures start. Shared by the layout test and tests/first-screen.mjs.

/// Counts at the page's top (scrollY = 0): `controls` (a label per control),
/// `words` (outside SVG figures and the welcome), and for each figure
/// (`#chain-svg`, `#memory-svg`, `#timeline-svg`) its top and bottom in CSS
/// pixels from the top of the page.
export async function firstScreen(page) {
  await page.evaluate(() => window.scrollTo(0, 0));
  return page.evaluate(() => {
    const fold = window.innerHeight;
    const shown = (el) => {
      const r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0) return false;
      // checkVisibility: not inside a closed <details> (whose content
      // keeps its boxes under content-visibility: hidden), nor hidden.
      if (!el.checkVisibility({ visibilityProperty: true, contentVisibilityAuto: true })) return false;
      return r.top < fold && r.bottom > 0;
    };
    const inWelcome = (el) => el.closest('#welcome, .welcome');
    const controls = [...document.querySelectorAll('button, input:not([type=hidden]), select, summary, a[href]')]
      .filter((el) => shown(el) && !inWelcome(el) && el.getAttribute('aria-hidden') !== 'true')
      .map((el) => (el.id || el.getAttribute('aria-label') || el.textContent || el.tagName).trim().slice(0, 30));
    let words = 0;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!el || el.closest('svg') || inWelcome(el) || el.closest('.sr-only, option, script, style')) continue;
      if (!shown(el)) continue;
      const r = document.createRange();
      r.selectNodeContents(n);
      const box = r.getBoundingClientRect();
      if (box.height === 0 || box.top >= fold) continue;
      words += n.textContent.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;
    }
    const figures = {};
    for (const id of ['chain-svg', 'memory-svg', 'timeline-svg']) {
      const el = document.getElementById(id);
      if (el) { const r = el.getBoundingClientRect(); figures[id] = [Math.round(r.top), Math.round(r.bottom)]; }
    }
    return { controls, words, figures };
  });
}
