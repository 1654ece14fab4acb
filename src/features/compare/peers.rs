//! The chain's peers on Compare's overhead-vs-budget figure: steps of the same
//! model measured another way (torch.compile's budget, selective
//! checkpointing, transformers' switch; `remat_core::model::Peer`, written
//! by `scripts/peers.py`), each a numbered diamond at its measured peak and
//! time, beside the planners' predicted curves — what a user's own knob
//! costs against what Remat plans at the same memory.

use crate::text::words::pct;
use remat_core::model::units::{format_bytes as bytes, format_seconds as ms};
use remat_core::model::Peer;

/// Where a peer lands on the figure: its overhead over the chain's
/// Σ(u_f + u_b), or why it is not drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum Placed {
    /// Inside the budget range, at this overhead.
    At(f64),
    /// Its peak is outside M_low … M_high (a knob that holds more than a
    /// plain step, or less than any schedule can).
    Outside,
}

/// Each peer's place on a figure spanning `lo … lo + span` bytes, against
/// the chain's sequential time `seq`.
pub fn place(peers: &[Peer], lo: f64, span: f64, seq: f64) -> Vec<Placed> {
    peers
        .iter()
        .map(|p| {
            let b = p.peak_bytes as f64;
            if b < lo || b > lo + span {
                Placed::Outside
            } else {
                Placed::At(p.seconds / seq.max(1e-12) - 1.0)
            }
        })
        .collect()
}

/// The lowest and highest overheads of the drawn peers (the figure's axis
/// makes room for both); None when none is drawn.
pub fn extent(placed: &[Placed]) -> Option<(f64, f64)> {
    placed
        .iter()
        .filter_map(|p| match p {
            Placed::At(o) => Some((*o, *o)),
            Placed::Outside => None,
        })
        .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
}

/// The diamonds: filled where the peer's gradients were right, hollow and
/// crossed where they were not; each with its number and a hover title.
/// `x` maps a peak in bytes, `y` an overhead to the figure's units (its
/// axis spans [`extent`]).
pub fn peers_svg(
    peers: &[Peer],
    placed: &[Placed],
    x: impl Fn(f64) -> f64,
    y: impl Fn(f64) -> f64,
) -> String {
    const INK: &str = "#1d2430";
    let mut s = String::new();
    for (i, (p, at)) in peers.iter().zip(placed).enumerate() {
        let Placed::At(o) = at else { continue };
        let (x, y) = (x(p.peak_bytes as f64), y(*o));
        let r = 5.5;
        let fill = if p.gradients_right { INK } else { "white" };
        let cross = if p.gradients_right {
            String::new()
        } else {
            format!(
                r#"<path d="M{:.1} {:.1}L{:.1} {:.1}" stroke="{INK}" stroke-width="1.5"/>"#,
                x - r * 0.6,
                y - r * 0.6,
                x + r * 0.6,
                y + r * 0.6
            )
        };
        s.push_str(&format!(
            r#"<g class="peer" data-peer="{n}"><path d="M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z" fill="{fill}" stroke="{INK}" stroke-width="1.5"/>{cross}<text x="{:.1}" y="{:.1}" font-size="11" font-weight="600" fill="{INK}">{n}</text><title>{}</title></g>"#,
            y - r,
            x + r,
            y + r,
            x - r,
            x + r + 2.0,
            y - r,
            title(i + 1, p, *o),
            n = i + 1,
        ));
    }
    s
}

/// A peer in words: what ran, its peak and time, its overhead over the
/// chain's sequential time, and whether its gradients were right.
pub fn title(n: usize, p: &Peer, overhead: f64) -> String {
    let over = if overhead < 0.0 {
        format!(
            "{} (faster than this chain's sequential time)",
            pct(overhead)
        )
    } else {
        pct(overhead)
    };
    format!(
        "{n}. {}: measured {} at {}, {over}{}",
        p.name,
        ms(p.seconds),
        bytes(p.peak_bytes),
        if p.gradients_right {
            ""
        } else {
            " — trains on wrong gradients"
        }
    )
}

/// The list under the figure: every peer, numbered as on it.
pub fn list(peers: &[Peer], placed: &[Placed]) -> Vec<String> {
    peers
        .iter()
        .zip(placed)
        .enumerate()
        .map(|(i, (p, at))| match at {
            Placed::At(o) => title(i + 1, p, *o),
            Placed::Outside => format!(
                "{}. {}: measured {} at {} — not drawn: outside this chain's M_low … M_high",
                i + 1,
                p.name,
                ms(p.seconds),
                bytes(p.peak_bytes)
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(name: &str, peak: u64, seconds: f64, right: bool) -> Peer {
        Peer {
            name: name.into(),
            peak_bytes: peak,
            seconds,
            gradients_right: right,
        }
    }

    /// Catches a peer placed by the wrong quantity (its overhead must be
    /// over the chain's sequential time) and one outside the range drawn
    /// anyway (it would sit on the frame's edge at a budget it is not at).
    #[test]
    fn peers_are_placed_by_peak_and_time_and_those_outside_are_named() {
        let peers = [
            peer("a", 150, 1.2, true),
            peer("b", 90, 2.0, true),
            peer("c", 210, 1.0, true),
        ];
        let placed = place(&peers, 100.0, 100.0, 1.0);
        assert_eq!(placed[1], Placed::Outside);
        assert_eq!(placed[2], Placed::Outside);
        let Placed::At(o) = placed[0] else {
            panic!("{placed:?}")
        };
        assert!((o - 0.2).abs() < 1e-12, "{o}");
        assert_eq!(extent(&placed), Some((o, o)));
        let words = list(&peers, &placed);
        assert!(words[1].contains("not drawn: outside"), "{words:?}");
        assert!(words[0].starts_with("1. a: measured"), "{words:?}");
    }

    /// Catches a peer with wrong gradients drawn like a right one (filled,
    /// no cross, no words): the figure would rank a knob that trains wrong.
    #[test]
    fn a_peer_with_wrong_gradients_is_hollow_crossed_and_says_so() {
        let peers = [
            peer("right", 150, 1.2, true),
            peer("wrong", 160, 1.1, false),
        ];
        let placed = place(&peers, 100.0, 100.0, 1.0);
        let svg = peers_svg(&peers, &placed, |b| b, |o| 100.0 * o);
        let (first, second) = svg.split_at(svg.find(r#"data-peer="2""#).unwrap());
        assert!(first.contains(r##"fill="#1d2430""##) && !first.contains("wrong gradients"));
        assert!(second.contains(r#"fill="white""#) && second.contains("trains on wrong gradients"));
        assert_eq!(second.matches("<path").count(), 2, "{second}");
    }
}
