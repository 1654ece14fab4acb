//! The link that names a view, `#chain=vgg19-h100&algorithm=rotor&budget=…&bandwidth=…`,
//! and how the browser's history follows the view. Plain Rust, tested on
//! the host; `io::url` wires it to `location` and `history`.

use crate::sizing::device_memory::{parse_margin, DeviceInputs, ModelState, Optimizer, Weights};
use crate::sizing::scaling::ExampleScale;
use remat_core::examples::Precision;
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
    /// The batch, sequence, precision where they differ from the profile
    /// (`batch=64&seq=2048&precision=bf16`); for an imported chain also
    /// the profile the user states (`profiled-batch=32&profiled-precision=bf16`).
    pub scale: ExampleScale,
    /// The device-memory view's inputs while it is open (`gpu=…&params=…
    /// &weights=…&optimizer=…&margin=…`, or `state=BYTES` for an entered
    /// model state).
    pub device: Option<DeviceInputs>,
    /// The lesson's step, 1-based as the page says it (`lesson=3`), while
    /// the lesson is open.
    pub lesson: Option<usize>,
    /// The presentation: figures only, large type, keys advance the lesson
    /// (`present=1`).
    pub present: bool,
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
            && agrees(&self.scale.batch, &full.scale.batch)
            && agrees(&self.scale.sequence, &full.scale.sequence)
            && agrees(&self.scale.precision, &full.scale.precision)
            && agrees(&self.scale.profiled.batch, &full.scale.profiled.batch)
            && agrees(
                &self.scale.profiled.precision,
                &full.scale.profiled.precision,
            )
            && agrees(&self.device, &full.device)
            && agrees(&self.lesson, &full.lesson)
            && (!self.present || full.present)
    }

    /// The same view apart from the budget (the slider's moves).
    fn same_but_budget(&self, other: &UrlState) -> bool {
        self.chain == other.chain
            && self.algorithm == other.algorithm
            && self.bandwidth == other.bandwidth
            && self.min_memory == other.min_memory
            && self.scale == other.scale
            && self.device == other.device
            && self.lesson == other.lesson
            && self.present == other.present
    }
}

/// Reads a location hash (with or without its `#`). Unknown keys and values
/// that do not parse are ignored: a hand-edited link shows what it can.
pub fn parse_hash(hash: &str) -> UrlState {
    let mut url = UrlState::default();
    let mut device = DevicePairs::default();
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
            "batch" => url.scale.batch = value.parse().ok().filter(|b: &u64| *b > 0),
            "seq" => url.scale.sequence = value.parse().ok().filter(|s: &u64| *s > 0),
            "precision" => url.scale.precision = Precision::from_name(&value),
            "profiled-batch" => {
                url.scale.profiled.batch = value.parse().ok().filter(|b: &u64| *b > 0)
            }
            "profiled-precision" => url.scale.profiled.precision = Precision::from_name(&value),
            "gpu" => device.gpu = value.parse().ok().filter(|b: &u64| *b > 0),
            "params" => device.parameters = value.parse().ok(),
            "weights" => device.weights = Weights::from_name(&value),
            "optimizer" => device.optimizer = Optimizer::from_name(&value),
            "state" => device.state = value.parse().ok(),
            "margin" => device.margin = parse_margin(&value).ok(),
            "lesson" => url.lesson = value.parse().ok().filter(|&n: &usize| n >= 1),
            "present" => url.present = value == "1",
            _ => {}
        }
    }
    url.device = device.inputs();
    url
}

/// The device-memory view's keys as read; the view is in the link when it
/// names a GPU size.
#[derive(Default)]
struct DevicePairs {
    gpu: Option<u64>,
    parameters: Option<u64>,
    weights: Option<Weights>,
    optimizer: Option<Optimizer>,
    state: Option<u64>,
    margin: Option<crate::sizing::device_memory::Margin>,
}

impl DevicePairs {
    fn inputs(self) -> Option<DeviceInputs> {
        let defaults = DeviceInputs::new(self.parameters.unwrap_or(0));
        let model = match (self.state, defaults.model) {
            (Some(bytes), _) => ModelState::Entered(bytes),
            (
                None,
                ModelState::Counted {
                    parameters,
                    weights,
                    optimizer,
                },
            ) => ModelState::Counted {
                parameters,
                weights: self.weights.unwrap_or(weights),
                optimizer: self.optimizer.unwrap_or(optimizer),
            },
            (None, entered) => entered,
        };
        Some(DeviceInputs {
            gpu_bytes: self.gpu?,
            model,
            margin: self.margin.unwrap_or(defaults.margin),
        })
    }
}

/// `hash` with what the view adds beyond the four: the chain's scale (only
/// what differs from its profile; an imported chain's stated profile) and
/// the device-memory inputs.
pub fn with_extras(
    mut hash: String,
    scale: &ExampleScale,
    device: Option<&DeviceInputs>,
) -> String {
    if let Some(b) = scale.batch {
        hash.push_str(&format!("&batch={b}"));
    }
    if let Some(s) = scale.sequence {
        hash.push_str(&format!("&seq={s}"));
    }
    if let Some(p) = scale.precision {
        hash.push_str(&format!("&precision={}", p.name()));
    }
    if let Some(b) = scale.profiled.batch {
        hash.push_str(&format!("&profiled-batch={b}"));
    }
    if let Some(p) = scale.profiled.precision {
        hash.push_str(&format!("&profiled-precision={}", p.name()));
    }
    if let Some(d) = device {
        hash.push_str(&format!("&gpu={}", d.gpu_bytes));
        match d.model {
            ModelState::Entered(bytes) => hash.push_str(&format!("&state={bytes}")),
            ModelState::Counted {
                parameters,
                weights,
                optimizer,
            } => hash.push_str(&format!(
                "&params={parameters}&weights={}&optimizer={}",
                weights.name(),
                optimizer.name()
            )),
        }
        hash.push_str(&format!(
            "&margin={}",
            percent_encode(&d.margin.to_string())
        ));
    }
    hash
}

/// `hash` with the minimum memory mode's `&min=MODEL` when it is on.
pub fn with_min_memory(mut hash: String, min_memory: Option<Model>) -> String {
    if let Some(model) = min_memory {
        hash.push_str(&format!("&min={}", model.name()));
    }
    hash
}

/// `hash` with the lesson's step and the presentation, while they are on.
pub fn with_lesson(mut hash: String, lesson: Option<usize>, present: bool) -> String {
    if let Some(n) = lesson {
        hash.push_str(&format!("&lesson={n}"));
    }
    if present {
        hash.push_str("&present=1");
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

    /// Nothing written yet (the page's first view is still to come).
    pub fn is_fresh(&self) -> bool {
        self.entry.is_none()
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
    use crate::sizing::scaling::ImportedProfile;

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

    // Fails if the lesson's step or the presentation is dropped on the
    // way, or a step 0 (the page counts from 1) were read as one.
    #[test]
    fn the_lesson_and_the_presentation_survive_the_link() {
        let hash = with_lesson(
            format_hash("teaching", Algorithm::Rotor, 5, 0.0),
            Some(3),
            true,
        );
        let url = parse_hash(&hash);
        assert_eq!((url.lesson, url.present), (Some(3), true));
        assert_eq!(url.chain.as_deref(), Some("teaching"));
        let plain = parse_hash(&with_lesson(hash.clone(), None, false));
        assert_eq!((plain.lesson, plain.present), (Some(3), true));
        assert_eq!(parse_hash("#lesson=0&present=yes").lesson, None);
        assert!(!parse_hash("#present=0").present);
        // Another step is another view (a new history entry), not a budget move.
        let other = parse_hash(&hash.replace("lesson=3", "lesson=4"));
        assert!(!url.same_but_budget(&other));
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

    // Fails if a scale or device field is dropped or changes on the way
    // (tried: `seq` written under the key `sequence`: read back, None).
    #[test]
    fn scale_and_device_inputs_survive_the_link() {
        let scale = ExampleScale {
            batch: Some(64),
            sequence: Some(2048),
            precision: Some(Precision::Bf16),
            profiled: ImportedProfile {
                batch: Some(32),
                precision: Some(Precision::Bf16),
            },
        };
        let devices = [
            DeviceInputs {
                gpu_bytes: 40 << 30,
                model: ModelState::Counted {
                    parameters: 124_439_808,
                    weights: Weights::Mixed,
                    optimizer: Optimizer::Momentum,
                },
                margin: crate::sizing::device_memory::Margin::Percent(7.5),
            },
            DeviceInputs {
                gpu_bytes: 24 << 30,
                model: ModelState::Entered(3_000_000_000),
                margin: crate::sizing::device_memory::Margin::Bytes(1 << 30),
            },
        ];
        for device in devices {
            let hash = with_extras(
                format_hash("gpt2-h100-math", Algorithm::Rotor, 5_000_000_000, 12e9),
                &scale,
                Some(&device),
            );
            let url = parse_hash(&hash);
            assert_eq!(url.scale, scale, "{hash}");
            assert_eq!(url.device, Some(device), "{hash}");
            assert_eq!(url.budget, Some(5_000_000_000));
        }
        let plain = with_extras(
            format_hash("vgg19", Algorithm::Rotor, 5, 12e9),
            &ExampleScale::default(),
            None,
        );
        assert_eq!(plain, format_hash("vgg19", Algorithm::Rotor, 5, 12e9));
        // A hand-edited link: a GPU alone gets the defaults; no GPU, no view.
        let url =
            parse_hash("#gpu=1000&batch=0&precision=fp8&profiled-batch=0&profiled-precision=fp64");
        assert_eq!(
            url.device.map(|d| d.margin),
            Some(crate::sizing::device_memory::DEFAULT_MARGIN)
        );
        assert_eq!(url.scale, ExampleScale::default());
        assert_eq!(parse_hash("#params=5&optimizer=sgd").device, None);
    }

    // Fails if every write pushes (tried: Write::Push for an open drag: the
    // drag's second move failed) or if views replace each other.
    #[test]
    fn history_pushes_views_and_replaces_while_dragging() {
        let mut pen = HistoryPen::default();
        assert!(pen.is_fresh());
        let first = view("vgg19-h100", Algorithm::Rotor, 100, 12e9);
        assert_eq!(
            pen.write(first.clone()),
            Some(Write::Replace),
            "the first view"
        );
        assert_eq!(pen.write(first.clone()), None, "nothing new");
        assert!(!pen.is_fresh());
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
        assert_eq!(pen.write(other.clone()), Some(Write::Push));
        // Another batch, or opening the device view: a new entry each.
        let mut batch = other.clone();
        batch.scale.batch = Some(64);
        assert_eq!(pen.write(batch.clone()), Some(Write::Push));
        let mut device = batch;
        device.device = Some(DeviceInputs::new(1));
        assert_eq!(pen.write(device.clone()), Some(Write::Push));
        // An imported chain's stated profile: a new entry too (Back walks it).
        let mut profiled = device;
        profiled.scale.profiled.batch = Some(32);
        assert_eq!(pen.write(profiled), Some(Write::Push));
    }
}
