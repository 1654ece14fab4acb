//! Learn's graph saved as a looping animated GIF (issue 27, point 6): which
//! operations become frames, how long each one shows, and the encoder that
//! turns the page's rasterised frames (RGBA pixels) into the file. Pure, so
//! the host tests it; `io::gif` draws each frame's SVG on a canvas and
//! feeds the pixels here.
//!
//! One frame per operation of the schedule; a long schedule keeps every
//! k-th operation (and always the last) so that the file stays small
//! enough to share: at most [`MAX_FRAMES`] frames. The GIF loops forever
//! (the NETSCAPE2.0 extension), each frame shown for the page's playback
//! speed (1 / ops-per-second), the last one held longer so the loop's end
//! reads as an end.
//!
//! Colours: a chart is a few flat colours (the page's palette) and the
//! blends its anti-aliased edges and text make. [`quantise`] keeps the
//! 256 most used colours of each frame exactly and maps every other one to
//! its nearest: the fills stay the page's own colours, however small (a
//! neural-net quantiser, tried first, turned a legend swatch's blue into
//! δ's green).
//!
//! Size: from one operation to the next only a few nodes, an arrow and the
//! caption change, so each frame after the first stores only the rectangle
//! that differs from the frame before, drawn over it ([`changed_rect`]):
//! the teaching chain's 32 frames went from 1.2 MB to 0.5 MB.

use gif::{DisposalMethod, Encoder, Frame, Repeat};
use std::collections::HashMap;

/// The most frames a GIF gets: half a minute of animation at the default
/// speed (4 ops/s).
pub const MAX_FRAMES: usize = 120;

/// The shortest a frame shows, in hundredths of a second: browsers show
/// frames of under 2 cs for 10 cs, so faster playback would look slower.
pub const MIN_DELAY_CS: u16 = 2;

/// The last frame is held at least this long (hundredths of a second).
pub const LAST_HOLD_CS: u16 = 200;

/// The operations that become frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FramePlan {
    /// The op indices drawn, in order.
    pub ops: Vec<usize>,
    /// 1: every op; k: every k-th op (the last always included).
    pub every: usize,
    /// The schedule's number of operations.
    pub total: usize,
}

impl FramePlan {
    /// Every op of `n_ops`, or every k-th (k the smallest that keeps at
    /// most `max` frames) plus the last one.
    pub fn new(n_ops: usize, max: usize) -> FramePlan {
        let max = max.max(2);
        let every = if n_ops <= max {
            1
        } else {
            // Frames at 0, k, 2k, … and the last op: ⌈n/k⌉ + 1 ≤ max.
            (1..=n_ops)
                .find(|&k| n_ops.div_ceil(k) < max)
                .unwrap_or(n_ops)
        };
        let mut ops: Vec<usize> = (0..n_ops).step_by(every.max(1)).collect();
        if n_ops > 0 && ops.last() != Some(&(n_ops - 1)) {
            ops.push(n_ops - 1);
        }
        FramePlan {
            ops,
            every,
            total: n_ops,
        }
    }

    /// Whether some operations are left out.
    pub fn capped(&self) -> bool {
        self.every > 1
    }

    /// What the frames show, for the title and the button's note: "all 32
    /// ops" or "every 4th op of 400 (101 frames)".
    pub fn describe(&self) -> String {
        if self.capped() {
            format!(
                "every {} op of {} ({} frames)",
                ordinal(self.every),
                self.total,
                self.ops.len()
            )
        } else {
            format!("all {} ops", self.total)
        }
    }
}

/// 2nd, 3rd, 4th, 11th, 21st …
fn ordinal(k: usize) -> String {
    let suffix = match (k % 10, k % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{k}{suffix}")
}

/// A frame's delay in hundredths of a second at `ops_per_s` (the page's
/// playback speed), at least [`MIN_DELAY_CS`].
pub fn frame_delay_cs(ops_per_s: f64) -> u16 {
    let cs = if ops_per_s.is_finite() && ops_per_s > 0.0 {
        (100.0 / ops_per_s).round()
    } else {
        100.0
    };
    (cs.clamp(MIN_DELAY_CS as f64, u16::MAX as f64)) as u16
}

/// The last frame's delay: three frames' worth, and at least
/// [`LAST_HOLD_CS`].
pub fn last_delay_cs(delay_cs: u16) -> u16 {
    delay_cs.saturating_mul(3).max(LAST_HOLD_CS)
}

/// `rgba` (opaque pixels, alpha ignored) as at most 256 colours: the
/// palette (RGB, 3 bytes a colour) and each pixel's index in it. The most
/// used colours are kept exactly (ties: the smaller RGB value first, so
/// the same pixels give the same file); the others become their nearest
/// kept colour.
pub fn quantise(rgba: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let rgb = |p: &[u8]| u32::from_be_bytes([0, p[0], p[1], p[2]]);
    let mut counts: HashMap<u32, u32> = HashMap::new();
    for p in rgba.chunks_exact(4) {
        *counts.entry(rgb(p)).or_default() += 1;
    }
    let mut by_use: Vec<(u32, u32)> = counts.iter().map(|(&c, &n)| (c, n)).collect();
    by_use.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let kept: Vec<u32> = by_use.iter().take(256).map(|&(c, _)| c).collect();
    let channels = |c: u32| {
        [
            (c >> 16) as i32 & 255,
            (c >> 8) as i32 & 255,
            c as i32 & 255,
        ]
    };
    let nearest = |c: u32| -> u8 {
        let [r, g, b] = channels(c);
        let mut best = (i32::MAX, 0u8);
        for (i, &k) in kept.iter().enumerate() {
            let [kr, kg, kb] = channels(k);
            let d = (r - kr).pow(2) + (g - kg).pow(2) + (b - kb).pow(2);
            if d < best.0 {
                best = (d, i as u8);
            }
        }
        best.1
    };
    let index: HashMap<u32, u8> = by_use
        .iter()
        .enumerate()
        .map(|(i, &(c, _))| (c, if i < 256 { i as u8 } else { nearest(c) }))
        .collect();
    let palette = kept
        .iter()
        .flat_map(|&c| channels(c).map(|v| v as u8))
        .collect();
    let indices = rgba.chunks_exact(4).map(|p| index[&rgb(p)]).collect();
    (palette, indices)
}

/// `text` cut at spaces into lines of at most `chars` shown characters
/// (the carets and underscores of the caret notation are not shown), at
/// most `max_rows` of them, the last ending in "…" when cut short: a
/// frame's caption, which a long chain's ops make longer than a line.
pub fn wrap_caption(text: &str, chars: usize, max_rows: usize) -> Vec<String> {
    let shown = |s: &str| s.chars().filter(|&c| c != '^' && c != '_').count();
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if shown(line) + 1 + shown(word) <= chars => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    let max_rows = max_rows.max(1);
    if lines.len() > max_rows {
        lines.truncate(max_rows);
        lines[max_rows - 1].push_str(" …");
    }
    lines
}

/// An animated GIF being written, frame by frame (the page rasterises one
/// frame at a time and hands its pixels over, so no more than one frame's
/// pixels are held).
pub struct GifWriter {
    encoder: Encoder<Vec<u8>>,
    width: u16,
    height: u16,
    frames: usize,
    /// The last frame's pixels: the next one stores what differs.
    previous: Option<Vec<u8>>,
}

/// Where `next` differs from `previous` (both `width` pixels a row, RGBA):
/// left, top, width, height; None when they are the same.
pub fn changed_rect(
    previous: &[u8],
    next: &[u8],
    width: usize,
) -> Option<(usize, usize, usize, usize)> {
    let row = width * 4;
    let rows = next.len() / row.max(1);
    let differs = |y: usize| previous[y * row..][..row] != next[y * row..][..row];
    let top = (0..rows).find(|&y| differs(y))?;
    let bottom = (top..rows).rev().find(|&y| differs(y))?;
    let (mut left, mut right) = (width, 0);
    for y in top..=bottom {
        let (a, b) = (&previous[y * row..][..row], &next[y * row..][..row]);
        if let Some(x) = (0..width).find(|&x| a[x * 4..][..4] != b[x * 4..][..4]) {
            left = left.min(x);
            right = right.max(
                (x..width)
                    .rev()
                    .find(|&x| a[x * 4..][..4] != b[x * 4..][..4])
                    .unwrap_or(x),
            );
        }
    }
    Some((left, top, right + 1 - left, bottom + 1 - top))
}

/// The pixels of `rgba` (`width` a row) in the rectangle `rect`.
fn crop(rgba: &[u8], width: usize, (left, top, w, h): (usize, usize, usize, usize)) -> Vec<u8> {
    let mut out = Vec::with_capacity(w * h * 4);
    for y in top..top + h {
        out.extend_from_slice(&rgba[(y * width + left) * 4..][..w * 4]);
    }
    out
}

impl GifWriter {
    /// A GIF of `width` × `height` pixels that loops forever.
    pub fn new(width: u32, height: u32) -> Result<GifWriter, String> {
        let (Ok(w), Ok(h)) = (u16::try_from(width), u16::try_from(height)) else {
            return Err(format!(
                "A GIF is at most 65535 pixels a side; this one would be {width} × {height}."
            ));
        };
        if w == 0 || h == 0 {
            return Err("Nothing to draw: the frame has no size.".into());
        }
        let mut encoder = Encoder::new(Vec::new(), w, h, &[])
            .map_err(|e| format!("Could not start the GIF: {e}"))?;
        encoder
            .set_repeat(Repeat::Infinite)
            .map_err(|e| format!("Could not make the GIF loop: {e}"))?;
        Ok(GifWriter {
            encoder,
            width: w,
            height: h,
            frames: 0,
            previous: None,
        })
    }

    /// Adds a frame: `rgba`, the canvas's pixels (4 bytes each, rows top
    /// to bottom, opaque), reduced to 256 colours; shown for `delay_cs`.
    pub fn add_frame(&mut self, rgba: &[u8], delay_cs: u16) -> Result<(), String> {
        let want = self.width as usize * self.height as usize * 4;
        if rgba.len() != want {
            return Err(format!(
                "Frame {} has {} bytes of pixels; a {} × {} frame needs {want}.",
                self.frames + 1,
                rgba.len(),
                self.width,
                self.height
            ));
        }
        let width = self.width as usize;
        let full = (0, 0, width, self.height as usize);
        // The first frame whole; then what changed, or one pixel when
        // nothing did (the frame still shows for its delay).
        let rect = match &self.previous {
            None => full,
            Some(p) => changed_rect(p, rgba, width).unwrap_or((0, 0, 1, 1)),
        };
        let (palette, indices) = quantise(&crop(rgba, width, rect));
        let (left, top, w, h) = rect;
        let mut frame = Frame::from_palette_pixels(w as u16, h as u16, indices, palette, None);
        frame.left = left as u16;
        frame.top = top as u16;
        frame.dispose = DisposalMethod::Keep;
        frame.delay = delay_cs;
        self.encoder
            .write_frame(&frame)
            .map_err(|e| format!("Could not write frame {}: {e}", self.frames + 1))?;
        self.frames += 1;
        self.previous = Some(rgba.to_vec());
        Ok(())
    }

    /// The frames written so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// The file's bytes.
    pub fn finish(self) -> Result<Vec<u8>, String> {
        if self.frames == 0 {
            return Err("No frame was drawn: nothing to save.".into());
        }
        self.encoder
            .into_inner()
            .map_err(|e| format!("Could not finish the GIF: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_is_a_frame_up_to_the_cap() {
        let p = FramePlan::new(32, MAX_FRAMES);
        assert_eq!(p.ops, (0..32).collect::<Vec<_>>());
        assert!(!p.capped());
        assert_eq!(p.describe(), "all 32 ops");
        assert_eq!(FramePlan::new(0, MAX_FRAMES).ops, Vec::<usize>::new());
    }

    #[test]
    fn a_long_schedule_keeps_every_kth_op_and_the_last() {
        for n in [121, 200, 241, 1000, 5003] {
            let p = FramePlan::new(n, MAX_FRAMES);
            assert!(p.ops.len() <= MAX_FRAMES, "{n}: {} frames", p.ops.len());
            assert!(p.capped());
            assert_eq!(p.ops[0], 0);
            assert_eq!(*p.ops.last().unwrap(), n - 1, "{n}: the last op is a frame");
            assert!(p
                .ops
                .windows(2)
                .all(|w| w[0] < w[1] && w[1] - w[0] <= p.every));
            // The smallest k that fits: k − 1 would not.
            if p.every > 1 {
                assert!(FramePlan::new(n, MAX_FRAMES).ops.len() <= MAX_FRAMES);
                assert!(
                    n.div_ceil(p.every - 1) + 1 > MAX_FRAMES,
                    "{n}: k = {}",
                    p.every
                );
            }
        }
        let p = FramePlan::new(400, MAX_FRAMES);
        assert_eq!(p.every, 4);
        assert_eq!(p.describe(), "every 4th op of 400 (101 frames)");
        assert_eq!(ordinal(2), "2nd");
        assert_eq!(ordinal(3), "3rd");
        assert_eq!(ordinal(11), "11th");
        assert_eq!(ordinal(21), "21st");
    }

    #[test]
    fn delays_follow_the_speed_and_the_last_frame_is_held() {
        assert_eq!(frame_delay_cs(4.0), 25);
        assert_eq!(frame_delay_cs(1.0), 100);
        assert_eq!(frame_delay_cs(40.0), 3);
        assert_eq!(frame_delay_cs(1000.0), MIN_DELAY_CS);
        assert_eq!(frame_delay_cs(0.0), 100);
        assert_eq!(frame_delay_cs(f64::NAN), 100);
        assert_eq!(last_delay_cs(25), LAST_HOLD_CS);
        assert_eq!(last_delay_cs(100), 300);
    }

    /// A w × h frame of one colour with a `mark` colour square at `at`.
    fn frame(w: usize, h: usize, at: usize, mark: [u8; 4]) -> Vec<u8> {
        let mut px = [255u8, 255, 255, 255].repeat(w * h);
        for y in 0..4 {
            for x in at..at + 4 {
                px[(y * w + x) * 4..][..4].copy_from_slice(&mark);
            }
        }
        px
    }

    #[test]
    fn the_gif_loops_and_holds_every_frame_with_its_delay() {
        let (w, h) = (24, 8);
        let mut g = GifWriter::new(w as u32, h as u32).unwrap();
        let marks = [[0, 114, 178, 255], [213, 94, 0, 255], [0, 158, 115, 255]];
        for (i, m) in marks.iter().enumerate() {
            let delay = if i == 2 { 200 } else { 25 };
            g.add_frame(&frame(w, h, i * 6, *m), delay).unwrap();
        }
        assert_eq!(g.frames(), 3);
        let bytes = g.finish().unwrap();
        assert_eq!(&bytes[..6], b"GIF89a");
        assert!(
            bytes.windows(11).any(|s| s == b"NETSCAPE2.0"),
            "the loop extension is written"
        );

        let mut options = gif::DecodeOptions::new();
        options.set_color_output(gif::ColorOutput::RGBA);
        let mut d = options.read_info(bytes.as_slice()).unwrap();
        assert_eq!(d.repeat(), Repeat::Infinite);
        assert_eq!((d.width(), d.height()), (w as u16, h as u16));
        // Each frame drawn over the one before, as a viewer shows it.
        let mut canvas = vec![0u8; w * h * 4];
        let mut seen = Vec::new();
        while let Some(f) = d.read_next_frame().unwrap() {
            let (fl, ft, fw) = (f.left as usize, f.top as usize, f.width as usize);
            for (i, px) in f.buffer.chunks_exact(4).enumerate() {
                let (x, y) = (fl + i % fw, ft + i / fw);
                canvas[(y * w + x) * 4..][..4].copy_from_slice(px);
            }
            seen.push((f.delay, canvas.clone()));
        }
        assert_eq!(
            seen.iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![25, 25, 200]
        );
        // Each frame's mark keeps its colour exactly.
        for (i, (_, px)) in seen.iter().enumerate() {
            assert_eq!(px[(i * 6) * 4..][..4], marks[i], "frame {i}");
        }
        assert_ne!(seen[0].1, seen[1].1);
        // Composited, each frame is the picture given, pixel for pixel
        // (only what changed is stored; these few colours are kept exactly).
        for (i, (_, px)) in seen.iter().enumerate() {
            assert!(*px == frame(w, h, i * 6, marks[i]), "frame {i}");
        }
    }

    #[test]
    fn only_the_changed_rectangle_is_stored() {
        let w = 10;
        let a = [255u8; 10 * 6 * 4].to_vec();
        assert_eq!(changed_rect(&a, &a, w), None);
        let mut b = a.clone();
        b[(2 * w + 3) * 4] = 0; // (3, 2)
        b[(4 * w + 7) * 4 + 1] = 0; // (7, 4)
        assert_eq!(changed_rect(&a, &b, w), Some((3, 2, 5, 3)));
        assert_eq!(crop(&b, w, (3, 2, 5, 3)).len(), 5 * 3 * 4);
        assert_eq!(crop(&b, w, (3, 2, 5, 3))[0], 0);
        let mut g = GifWriter::new(10, 6).unwrap();
        g.add_frame(&a, 10).unwrap();
        g.add_frame(&b, 10).unwrap();
        g.add_frame(&b, 10).unwrap();
        let bytes = g.finish().unwrap();
        let mut d = gif::DecodeOptions::new()
            .read_info(bytes.as_slice())
            .unwrap();
        let mut rects = Vec::new();
        while let Some(f) = d.read_next_frame().unwrap() {
            rects.push((f.left, f.top, f.width, f.height));
        }
        assert_eq!(rects, vec![(0, 0, 10, 6), (3, 2, 5, 3), (0, 0, 1, 1)]);
    }

    #[test]
    fn the_quantiser_keeps_rare_flat_colours_exactly() {
        // 300 greys used 10 times each, a blue used 40 times and a green
        // 12 times: blue and green are kept exactly, the greys left out
        // become their nearest kept grey.
        let mut px = Vec::new();
        for v in 0..300u32 {
            let g = (v * 255 / 299) as u8;
            for _ in 0..10 {
                px.extend_from_slice(&[g, g, g.wrapping_add((v % 2) as u8), 255]);
            }
        }
        let blue = [0u8, 114, 178, 255];
        let green = [0u8, 158, 115, 255];
        px.extend(blue.repeat(40));
        px.extend(green.repeat(12));
        let (palette, indices) = quantise(&px);
        assert_eq!(palette.len(), 256 * 3);
        assert_eq!(indices.len(), px.len() / 4);
        let colour = |i: usize| &palette[indices[i] as usize * 3..][..3];
        let n = px.len() / 4;
        assert_eq!(colour(n - 1), &green[..3]);
        assert_eq!(colour(n - 13), &blue[..3]);
        // Every pixel is drawn in the kept colour nearest its own.
        let d = |a: &[u8], b: &[u8]| -> i32 {
            (0..3).map(|k| (a[k] as i32 - b[k] as i32).pow(2)).sum()
        };
        for (i, p) in px.chunks_exact(4).enumerate() {
            let best = palette.chunks_exact(3).map(|c| d(c, p)).min().unwrap();
            assert_eq!(
                d(colour(i), p),
                best,
                "pixel {i}: {p:?} drawn as {:?}",
                colour(i)
            );
        }
        // Few colours: all kept, the palette no longer than they.
        let (palette, indices) = quantise(&[blue, green, blue].concat());
        assert_eq!(palette.len(), 6);
        assert_eq!(indices, vec![0, 1, 0]);
    }

    #[test]
    fn captions_wrap_at_spaces_and_notation_takes_no_room() {
        let c = "F_all^48, recomputed (2nd time) on the way to B^49; ā^48 is kept again";
        assert_eq!(wrap_caption(c, 200, 3), vec![c.to_string()]);
        // Shown: "Fall48, recomputed (2nd time)" is 29 characters, "on
        // the way to B49; ā48 is kept" 30.
        let lines = wrap_caption(c, 30, 3);
        assert_eq!(
            lines,
            vec![
                "F_all^48, recomputed (2nd time)",
                "on the way to B^49; ā^48 is kept",
                "again"
            ]
        );
        assert_eq!(
            wrap_caption(c, 30, 2),
            vec![
                "F_all^48, recomputed (2nd time)",
                "on the way to B^49; ā^48 is kept …"
            ]
        );
        assert_eq!(wrap_caption(c, 29, 9)[1], "on the way to B^49; ā^48 is");
        assert_eq!(wrap_caption("", 30, 2), Vec::<String>::new());
    }

    #[test]
    fn wrong_sizes_say_what_is_wrong() {
        let e = GifWriter::new(70_000, 10).err().unwrap();
        assert!(e.contains("65535"), "{e}");
        let mut g = GifWriter::new(4, 4).unwrap();
        let e = g.add_frame(&[0u8; 12], 10).unwrap_err();
        assert!(e.contains("needs 64"), "{e}");
        assert!(GifWriter::new(4, 4).unwrap().finish().is_err());
    }
}
