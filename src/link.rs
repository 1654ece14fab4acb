//! The link that names a view, `#chain=vgg19-h100&algorithm=rotor&budget=…&bandwidth=…`,
//! and how the browser's history follows the view. Plain Rust, tested on
//! the host; `io::url` wires it to `location` and `history`.

use remat_core::solvers::hong::Model;
use remat_core::solvers::Algorithm;

/// The `bandwidth` of a link without a host link ("none"); in the page's
/// controls a rate of 0 stands for it.
pub const NO_LINK: &str = "none";

/// What a link says; `None` where it says nothing (the page keeps its own).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UrlState {
    pub chain: Option<String>,
    pub algorithm: Option<Algorithm>,
    pub budget: Option<u64>,
    /// Bytes/s; `Some(0.0)`: no host link.
    pub bandwidth: Option<f64>,
    /// The minimum memory mode, on in this model (`min=pytorch|chen`).
    pub min_memory: Option<Model>,
}

impl UrlState {
    /// Whether the link names a view at all (a first visit names none).
    pub fn names_a_view(&self) -> bool {
        *self != UrlState::default()
    }

    /// Whether `full` is this link with the fields it leaves out filled in.
    fn completed_by(&self, full: &UrlState) -> bool {
        fn agrees<T: PartialEq>(part: &Option<T>, full: &Option<T>) -> bool {
            part.is_none() || part == full
        }
        agrees(&self.chain, &full.chain)
            && agrees(&self.algorithm, &full.algorithm)
            && agrees(&self.budget, &full.budget)
            && agrees(&self.bandwidth, &full.bandwidth)
            && agrees(&self.min_memory, &full.min_memory)
    }

    /// The same view apart from the budget (the slider's moves).
    fn same_but_budget(&self, other: &UrlState) -> bool {
        self.chain == other.chain
            && self.algorithm == other.algorithm
            && self.bandwidth == other.bandwidth
            && self.min_memory == other.min_memory
    }
}

/// Reads a location hash (with or without its `#`). Unknown keys and values
/// that do not parse are ignored: a hand-edited link shows what it can.
pub fn parse_hash(hash: &str) -> UrlState {
    let mut url = UrlState::default();
    for pair in hash.trim_start_matches('#').split('&') {
        let Some((key, value)) = pair.split_once('=') else {
            continue;
        };
        let value = percent_decode(value);
        match key {
            "chain" if !value.is_empty() => url.chain = Some(value),
            "algorithm" => url.algorithm = Algorithm::from_name(&value).ok(),
            "budget" => url.budget = value.parse().ok().filter(|b: &u64| *b > 0),
            "bandwidth" if value == NO_LINK => url.bandwidth = Some(0.0),
            "bandwidth" => {
                url.bandwidth = value
                    .parse()
                    .ok()
                    .filter(|b: &f64| b.is_finite() && *b >= 0.0)
            }
            "min" => url.min_memory = value.parse().ok(),
            _ => {}
        }
    }
    url
}

/// `hash` with the minimum memory mode's `&min=MODEL` when it is on.
pub fn with_min_memory(mut hash: String, min_memory: Option<Model>) -> String {
    if let Some(model) = min_memory {
        hash.push_str(&format!("&min={}", model.name()));
    }
    hash
}

/// Writes the hash of a complete view (the page always has all four).
pub fn format_hash(chain: &str, algorithm: Algorithm, budget: u64, bandwidth: f64) -> String {
    let bandwidth = if bandwidth > 0.0 {
        bandwidth.to_string()
    } else {
        NO_LINK.to_string()
    };
    format!(
        "#chain={}&algorithm={}&budget={budget}&bandwidth={bandwidth}",
        percent_encode(chain),
        algorithm.name()
    )
}

fn percent_encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `%XX` escapes (and `+` left as is); a broken escape stays as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |j: usize| bytes.get(j).and_then(|c| (*c as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// How a new view enters the browser's history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// A new entry: Back returns to the view before.
    Push,
    /// The current entry changes (the page's first view, a slider drag).
    Replace,
}

/// The history's side of the view: what the current entry holds and whether
/// it is a slider drag still under way (replaced while it moves).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistoryPen {
    /// The view the current entry names; None before the first write.
    entry: Option<UrlState>,
    /// The current entry is a budget being dragged: later budgets replace it.
    open: bool,
    /// The current entry is a link the browser arrived at, perhaps partial:
    /// the page's complete view of it replaces it.
    arrived: bool,
}

impl HistoryPen {
    /// How to write `next`, or None when the entry already names it.
    /// A new chain, algorithm or bandwidth pushes; a budget pushes once, then
    /// replaces its own entry until the slider is released.
    pub fn write(&mut self, next: UrlState) -> Option<Write> {
        let arrived = std::mem::take(&mut self.arrived);
        let action = match &self.entry {
            None => Write::Replace,
            Some(entry) if *entry == next => return None,
            Some(entry) if arrived && entry.completed_by(&next) => Write::Replace,
            Some(entry) if entry.same_but_budget(&next) && self.open => Write::Replace,
            Some(_) => Write::Push,
        };
        let budget_move = self
            .entry
            .as_ref()
            .is_some_and(|e| e.same_but_budget(&next));
        self.open = budget_move;
        self.entry = Some(next);
        Some(action)
    }

    /// The slider was let go (a write still waiting must be made first):
    /// the next budget starts a new entry.
    pub fn release(&mut self) {
        self.open = false;
    }

    /// The browser moved to an entry (Back, Forward, an edited hash): the
    /// page applies it, and the view it then shows replaces that entry (a
    /// hand-edited link may leave out fields; Back must not meet it again).
    pub fn arrived(&mut self, entry: UrlState) {
        self.entry = Some(entry);
        self.open = false;
        self.arrived = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(chain: &str, alg: Algorithm, budget: u64, bw: f64) -> UrlState {
        parse_hash(&format_hash(chain, alg, budget, bw))
    }

    // Fails if a field is dropped or changes on the way (tried: writing "0"
    // for no link: read back, the "none" check failed).
    #[test]
    fn a_view_survives_its_link() {
        for (chain, alg, budget, bw) in [
            ("vgg19-h100", Algorithm::Rotor, 3_000_000_000, 12e9),
            ("teaching", Algorithm::Pofo, 600_000_000, 0.0),
            ("imported", Algorithm::Revolve, 1, 450e9),
        ] {
            let url = view(chain, alg, budget, bw);
            assert_eq!(url.chain.as_deref(), Some(chain));
            assert_eq!(url.algorithm, Some(alg));
            assert_eq!(url.budget, Some(budget));
            assert_eq!(url.bandwidth, Some(bw));
        }
        assert!(format_hash("teaching", Algorithm::Pofo, 5, 0.0).ends_with("bandwidth=none"));
    }

    #[test]
    fn hand_edited_links_show_what_they_can() {
        let url = parse_hash("#chain=vgg19&algorithm=nonsense&budget=-3&bandwidth=fast&x=1");
        assert_eq!(url.chain.as_deref(), Some("vgg19"));
        assert_eq!(
            (url.algorithm, url.budget, url.bandwidth),
            (None, None, None)
        );
        assert!(!parse_hash("").names_a_view());
        assert!(!parse_hash("#").names_a_view());
        assert!(parse_hash("#algorithm=pofo").names_a_view());
        assert_eq!(parse_hash("bandwidth=0").bandwidth, Some(0.0));
        assert_eq!(
            parse_hash("chain=my%20chain%zz").chain.as_deref(),
            Some("my chain%zz")
        );
        assert_eq!(percent_decode(&percent_encode("a b/ç")), "a b/ç");
    }

    // Fails if every write pushes (tried: Write::Push for an open drag: the
    // drag's second move failed) or if views replace each other.
    #[test]
    fn history_pushes_views_and_replaces_while_dragging() {
        let mut pen = HistoryPen::default();
        let first = view("vgg19-h100", Algorithm::Rotor, 100, 12e9);
        assert_eq!(
            pen.write(first.clone()),
            Some(Write::Replace),
            "the first view"
        );
        assert_eq!(pen.write(first.clone()), None, "nothing new");
        // A drag: one new entry, then replaced until the release (None:
        // the slider let go). Another algorithm, link or chain: a new entry each.
        let moves = [
            (
                Some(("vgg19-h100", Algorithm::Rotor, 110, 12e9)),
                Some(Write::Push),
            ),
            (
                Some(("vgg19-h100", Algorithm::Rotor, 120, 12e9)),
                Some(Write::Replace),
            ),
            (None, None),
            (
                Some(("vgg19-h100", Algorithm::Rotor, 130, 12e9)),
                Some(Write::Push),
            ),
            (
                Some(("vgg19-h100", Algorithm::Rotor, 140, 12e9)),
                Some(Write::Replace),
            ),
            (
                Some(("vgg19-h100", Algorithm::Pofo, 140, 12e9)),
                Some(Write::Push),
            ),
            (
                Some(("vgg19-h100", Algorithm::Pofo, 140, 0.0)),
                Some(Write::Push),
            ),
            (
                Some(("teaching", Algorithm::Pofo, 140, 0.0)),
                Some(Write::Push),
            ),
        ];
        for (step, (moved, expected)) in moves.into_iter().enumerate() {
            match moved {
                Some((chain, alg, budget, bw)) => assert_eq!(
                    pen.write(view(chain, alg, budget, bw)),
                    expected,
                    "move {step}"
                ),
                None => pen.release(),
            }
        }
        // Back: the entry names the view the page then shows; no write.
        // (The browser may report one move twice: hashchange and popstate.)
        let back = view("vgg19-h100", Algorithm::Pofo, 140, 0.0);
        pen.arrived(back.clone());
        pen.arrived(back.clone());
        assert_eq!(pen.write(back), None);
        assert_eq!(
            pen.write(view("vgg19-h100", Algorithm::Pofo, 150, 0.0)),
            Some(Write::Push)
        );
        // An edited, partial link: the page's full view replaces it, and the
        // next view is a new entry.
        pen.arrived(parse_hash("#chain=teaching&algorithm=rotor"));
        let full = view("teaching", Algorithm::Rotor, 7, 12e9);
        assert_eq!(pen.write(full), Some(Write::Replace));
        let other = view("teaching", Algorithm::Pofo, 7, 12e9);
        assert_eq!(pen.write(other), Some(Write::Push));
    }
}
