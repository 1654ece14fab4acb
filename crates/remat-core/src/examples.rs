//! Built-in example chains, each with its provenance in `source`.
//!
//! Three kinds ([`Provenance`]):
//! * **measured** chains, stored as `remat-chain/1` files in `data/` and
//!   compiled in with `include_str!` (so the explorer has them in wasm too).
//!   Adding one is one entry in [`EXAMPLES`]:
//!   `measured("NAME", "one line: what, where, when", include_str!("../data/FILE.json")),`
//!   — the test `every_example_is_valid_and_named` then checks that the file
//!   parses, validates and says where it comes from;
//! * **analytic** chains computed from the architectures here. Sizes follow
//!   what PyTorch's autograd keeps (in-place ReLUs, dropout masks, one copy of
//!   the loss's log-softmax), checked against the measured H100 chains; the
//!   transient overheads (cuDNN workspaces, ReLU-backward buffers, parameter
//!   gradients) are stated rules of thumb, so these are rough estimates.
//!   Times are a FLOP estimate, not measurements: a forward takes FLOPs / 10
//!   TFLOP/s (a V100-class GPU at about 70% of its fp32 peak), a backward
//!   twice its forward, and memory-bound layers (pooling, embeddings) take
//!   the bytes they read and write / 800 GB/s — an H100 with TF32 ran the
//!   measured chains 2.4–12× faster, with a different time per stage;
//! * **hand-made** chains with round numbers: the **teaching** chain, and
//!   the rotor report's counter-example to persistence (**nonpersistent**).

use crate::format::read_chain;
use crate::model::{Chain, MenuOption, Stage};
use crate::schedule::{Op, TensorKind};

const FLOPS_PER_S: f64 = 10e12;
const MEMORY_BYTES_PER_S: f64 = 800e9;
const PCIE3_X16: f64 = 12e9;
const F32: u64 = 4;

/// Where an example's numbers come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// Measured on a real device (the file's `source` says which and how).
    Measured,
    /// Computed from the architecture: a rough estimate.
    Analytic,
    /// Made up with round numbers, for learning.
    HandMade,
}

impl Provenance {
    /// A word for lists and pickers.
    pub fn label(self) -> &'static str {
        match self {
            Provenance::Measured => "measured",
            Provenance::Analytic => "analytic",
            Provenance::HandMade => "hand-made",
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Data {
    Built(fn() -> Chain),
    /// A `remat-chain/1` document compiled into the binary.
    File(&'static str),
}

/// The number format a chain's activations were profiled (or computed) in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// 4 bytes an element (the measured H100 chains: fp32 storage, TF32
    /// convolutions).
    Fp32,
    /// 2 bytes an element.
    Bf16,
}

impl Precision {
    pub const ALL: [Precision; 2] = [Precision::Fp32, Precision::Bf16];

    /// Bytes an element.
    pub fn bytes(self) -> u64 {
        match self {
            Precision::Fp32 => 4,
            Precision::Bf16 => 2,
        }
    }

    /// `fp32` or `bf16`, as links and pickers write it.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
        }
    }

    pub fn from_name(name: &str) -> Option<Precision> {
        Precision::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// What an example was profiled at and how big its model is, so that the
/// explorer can rescale it (batch, sequence, precision) and count the
/// weights, gradients and optimizer state beside its activations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Trainable parameters of the whole model (not in any chain size).
    pub parameters: u64,
    /// Samples per step the sizes and times are for.
    pub batch: u64,
    /// Tokens per sample, for token models; None for images.
    pub sequence: Option<u64>,
    pub precision: Precision,
}

const fn images(parameters: u64, batch: u64) -> Profile {
    Profile {
        parameters,
        batch,
        sequence: None,
        precision: Precision::Fp32,
    }
}

const fn tokens(parameters: u64, batch: u64, sequence: u64) -> Profile {
    Profile {
        parameters,
        batch,
        sequence: Some(sequence),
        precision: Precision::Fp32,
    }
}

/// Parameter counts, from the architectures (torchvision's counts) or, for
/// the CPU profiles, the parameter-gradient sum their `source` states ÷ 4
/// bytes (ResNet-18: 46 758 048 B; VGG-19 at 32 px, whose classifier then
/// reads 512 features, not 25 088: 172 015 776 B).
const RESNET50_PARAMETERS: u64 = 25_557_032;
const VGG19_PARAMETERS: u64 = 143_667_240;
/// GPT-2 small: 12 blocks, h 768, vocabulary 50 257, 1024 positions, tied
/// head (the measured files state the shape, not the vocabulary).
const GPT2_PARAMETERS: u64 = 124_439_808;
const RESNET18_PARAMETERS: u64 = 46_758_048 / 4;
/// The CPU GPT-2 described by remat_torch: GPT2Config(n_layer=4, n_embd=128,
/// n_head=4, vocab_size=2000, n_positions=128), tied head (counted by
/// PyTorch: `sum(p.numel() for p in model.parameters())`).
const GPT2_TINY_PARAMETERS: u64 = 1_065_728;
/// transformers' Llama, 6 layers × 256, GQA, vocabulary 2000 (untied head).
const LLAMA_TINY_PARAMETERS: u64 = 5_180_672;
const VGG19_32PX_PARAMETERS: u64 = 172_015_776 / 4;

/// One built-in chain: `example:NAME` on the command line, `#chain=NAME` in
/// the explorer.
#[derive(Clone, Copy, Debug)]
pub struct Example {
    pub name: &'static str,
    /// One line: what it is, and measured where and when or how estimated.
    pub about: &'static str,
    pub provenance: Provenance,
    /// The profile it was taken at; None for the hand-made chain.
    pub profile: Option<Profile>,
    data: Data,
}

impl Example {
    /// The chain. A measured file that does not parse is a build defect that
    /// the unit tests catch, never user input, hence the `expect`.
    pub fn chain(&self) -> Chain {
        match self.data {
            Data::Built(f) => f(),
            Data::File(text) => {
                read_chain(text).unwrap_or_else(|e| panic!("built-in example {}: {e}", self.name))
            }
        }
    }
}

const fn measured(name: &'static str, about: &'static str, json: &'static str) -> Example {
    Example {
        name,
        about,
        provenance: Provenance::Measured,
        profile: None,
        data: Data::File(json),
    }
}

const fn analytic(name: &'static str, about: &'static str, f: fn() -> Chain) -> Example {
    Example {
        name,
        about,
        provenance: Provenance::Analytic,
        profile: None,
        data: Data::Built(f),
    }
}

impl Example {
    /// The example with the profile it was taken at.
    const fn at(self, profile: Profile) -> Example {
        Example {
            profile: Some(profile),
            ..self
        }
    }
}

/// Every built-in chain, in the order lists show them. Not reformatted, so
/// that each example stays one line.
#[rustfmt::skip]
pub const EXAMPLES: &[Example] = &[
    Example {
        name: "teaching",
        about: "hand-made: homogeneous 10-stage teaching chain (round numbers)",
        provenance: Provenance::HandMade,
        profile: None,
        data: Data::Built(teaching),
    },
    // Measured chains: one line each (file in crates/remat-core/data/).
    measured("vgg19-h100", "measured on an H100 80GB (PyTorch 2.11, 2026-11-23): VGG-19, batch 32, 224 px, fp32/TF32", include_str!("../data/h100-vgg19.json")).at(images(VGG19_PARAMETERS, 32)),
    measured("resnet50-h100", "measured on an H100 80GB (PyTorch 2.11, 2026-11-23): ResNet-50, batch 32, 224 px, fp32/TF32", include_str!("../data/h100-resnet50.json")).at(images(RESNET50_PARAMETERS, 32)),
    measured("gpt2-h100-efficient", "measured on an H100 80GB (PyTorch 2.11, 2026-11-23): GPT-2 style, 12 blocks, batch 4, seq 1024, fp32, memory-efficient attention", include_str!("../data/h100-gpt2-efficient.json")).at(tokens(GPT2_PARAMETERS, 4, 1024)),
    measured("gpt2-h100-math", "measured on an H100 80GB (PyTorch 2.11, 2026-11-23): GPT-2 style, 12 blocks, batch 4, seq 1024, fp32, math attention (scores kept)", include_str!("../data/h100-gpt2-math.json")).at(tokens(GPT2_PARAMETERS, 4, 1024)),
    measured("gpt2-cpu-torch", "measured on this project's 2-core CPU build machine by remat_torch.describe_chain (PyTorch 2.13, transformers 5.24, 2026-11-26), stages found in the model: GPT-2, 4 blocks × 128, vocabulary 2000, batch 4, seq 128, fp32", include_str!("../data/cpu-gpt2-remat-torch.json")).at(tokens(GPT2_TINY_PARAMETERS, 4, 128)),
    measured("llama-cpu-compiled", "measured on this project's 2-core CPU build machine by remat_torch.describe_chain(compile=True, menu=True) and scripts/peers.py (PyTorch 2.13, 2026-12-02): transformers' Llama, 6 layers × 256, GQA, vocabulary 2000, batch 4, seq 256, fp32; stages compiled by torch.compile one by one, the partitioner's budgets as menu options; with the knobs users already have measured beside it as peers", include_str!("../data/cpu-llama-compiled-peers.json")).at(tokens(LLAMA_TINY_PARAMETERS, 4, 256)),
    measured("gpt2-h200-torch", "measured on an H200 by remat_torch.describe_chain (PyTorch 2.11, transformers 5.17, 2026-11-26), stages found in the model: GPT-2 small, 12 blocks, batch 4, seq 1024, fp32", include_str!("../data/h200-gpt2-remat-torch.json")).at(tokens(GPT2_PARAMETERS, 4, 1024)),
    measured("resnet18-cpu", "measured on this project's 2-core CPU build machine by remat-profile (libtorch 2.13, 2026-11-23): ResNet-18, batch 8, 96 px, fp32", include_str!("../data/cpu-resnet18-b8-96px.json")).at(images(RESNET18_PARAMETERS, 8)),
    measured("vgg19-cpu", "measured on this project's 2-core CPU build machine by remat-profile (libtorch 2.13, 2026-11-23): VGG-19, batch 4, 32 px, fp32", include_str!("../data/cpu-vgg19-b4-32px.json")).at(images(VGG19_32PX_PARAMETERS, 4)),
    // Analytic chains.
    analytic("vgg19", "analytic, rough: VGG-19, batch 32, 224 px, fp32 (sizes from the architecture, V100-class FLOP times)", vgg19).at(images(VGG19_PARAMETERS, 32)),
    analytic("resnet50", "analytic, rough: ResNet-50, batch 32, 224 px, fp32 (sizes from the architecture, V100-class FLOP times)", resnet50).at(images(RESNET50_PARAMETERS, 32)),
    analytic("gpt2", "analytic, rough: GPT-2 style, 12 blocks, batch 4, seq 1024, fp32, no attention scores kept (V100-class FLOP times)", gpt2).at(tokens(GPT2_PARAMETERS, 4, 1024)),
    analytic("gpt2-sac", "analytic, rough: GPT-2 style, 12 blocks, batch 4, seq 1024, fp32, with a menu of selective-checkpointing policies per block (save matmuls + attention, every other matmul, attention only, nothing)", gpt2_sac).at(tokens(GPT2_PARAMETERS, 4, 1024)),
    Example { name: "nonpersistent", about: "hand-made: the rotor report's Figure 2 (§4.1), its counter-example to persistence; n = 10, 12 stages, its budget is 8 MiB", provenance: Provenance::HandMade, data: Data::Built(nonpersistent), profile: None },
    Example { name: "optimal-wins", about: "hand-made: a random 5-stage chain where the exact optimum (79 s) beats rotor (88 s) at 33 B — no persistent schedule is optimal", provenance: Provenance::HandMade, data: Data::File(include_str!("../data/nonpersistent-5-stages.json")), profile: None },
];

/// What a chain's `source` says about where its numbers come from, by its
/// first word: `measured …` or the profiler's `remat-profile …`,
/// `analytic …`, `hand-made …`; None for anything else (an imported chain).
pub fn provenance_of(source: &str) -> Option<Provenance> {
    let first = source.split([':', ' ', ',']).next().unwrap_or("");
    match first {
        "measured" | "remat-profile" => Some(Provenance::Measured),
        "analytic" => Some(Provenance::Analytic),
        "hand-made" => Some(Provenance::HandMade),
        _ => None,
    }
}

/// The example called `name` (without the `example:` prefix).
pub fn find(name: &str) -> Option<&'static Example> {
    EXAMPLES.iter().find(|e| e.name == name)
}

/// The chain of the example called `name`.
pub fn by_name(name: &str) -> Option<Chain> {
    find(name).map(Example::chain)
}

/// The names, in list order.
pub fn names() -> impl Iterator<Item = &'static str> {
    EXAMPLES.iter().map(|e| e.name)
}

fn mib(x: u64) -> u64 {
    x << 20
}

/// Ten identical stages with round numbers, for learning how the operations
/// trade memory for time: F 10 ms, B 20 ms, a^ℓ 64 MiB, ā^ℓ 128 MiB. The
/// loss is folded into stage 10, so a^10 is a 4-byte scalar.
pub fn teaching() -> Chain {
    let mut stages: Vec<Stage> = (1..=10)
        .map(|l| Stage::new(format!("layer {l}"), 0.010, 0.020, mib(64), mib(128)))
        .collect();
    let last = stages.last_mut().expect("ten stages");
    last.name = "layer 10 + loss".into();
    last.output_bytes = 4;
    last.gradient_bytes = 4;
    Chain {
        name: "teaching chain".into(),
        source: "hand-made: 10 identical stages, F 10 ms, B 20 ms, a 64 MiB, ā 128 MiB; loss folded into stage 10".into(),
        input_bytes: mib(64),
        input_gradient_bytes: mib(64),
        bandwidth_bytes_per_s: Some(PCIE3_X16),
        stages,
        ..Chain::default()
    }
}

/// The default n of `example:nonpersistent`: L = n + 2 = 12 stages, long
/// enough for the report's makespans to differ clearly (T0 = 2n + 2 = 22 s
/// against the best persistent schedule's 3n − 1 = 29 s) and short enough
/// for `optimal` to solve it in well under a second.
pub const NONPERSISTENT_N: usize = 10;

/// `example:nonpersistent`: [`nonpersistent_chain`] with n = [`NONPERSISTENT_N`].
pub fn nonpersistent() -> Chain {
    nonpersistent_chain(NONPERSISTENT_N)
}

/// The rotor report's counter-example (RR-9302, §4.1, Figure 2) for n ≥ 3:
/// L = n + 2 stages, k = n − 1, memory limit M = 8; one unit of size is
/// 1 MiB, one of time 1 s. docs/examples.md argues every value.
///
/// From the report's text: u_f^1 = k, u_f^2 = 2, every other forward and
/// every backward free; every gradient of size 0.
///
/// From the figure's edge labels (they survive in the report's text only as
/// two runs of numbers, 1 2 3 3 3 4 on the forward edges a^1 … a^L and
/// 1 2 3 3 4 on the edges a^{ℓ−1} → B^ℓ): ω_a^1 = 1, ω_a^2 = 2,
/// ω_a^ℓ = 3 for 3 ≤ ℓ < L and ω_a^L = 4. These make every sentence of
/// §4.1 hold: F^L needs a^{L−1} + a^L = 7 (a^1 fits beside it, a^2 does
/// not), F^{L−1} needs 6 (a^2 fits, a^1 and a^2 together do not, nor a^1
/// and any later a^ℓ). The text's "ω_a = 1 except ω_a^2 = ω_a^L = 2"
/// cannot: with ω_a^3 = 1, keeping a^1 and a^3 costs what keeping a^2
/// costs, and a persistent schedule that does so beats T0.
///
/// Ours: ω_ā^ℓ = ω_a^ℓ (the figure labels no ā apart, and B^ℓ needs
/// nothing else), ω_a^0 = 0 (a^0 counts in M, and a^0 of size 1 would leave
/// no room for a^1 beside F^L), no overheads, the loss folded into stage L
/// (δ^L, the seed, has size 0 like every gradient).
pub fn nonpersistent_chain(n: usize) -> Chain {
    let l_last = n + 2;
    let k = n.saturating_sub(1) as f64;
    let stages = (1..=l_last)
        .map(|l| {
            let forward = match l {
                1 => k,
                2 => 2.0,
                _ => 0.0,
            };
            let size = match l {
                1 => 1,
                2 => 2,
                _ if l == l_last => 4,
                _ => 3,
            };
            let mut s = Stage::new(format!("F{l}"), forward, 0.0, mib(size), mib(size));
            s.gradient_bytes = 0;
            s
        })
        .collect();
    Chain {
        name: format!("rotor report's non-persistent counter-example (n = {n})"),
        source: format!("hand-made by the rotor report's authors: RR-9302 §4.1, Figure 2, n = {n}, k = n − 1 = {}; sizes in MiB (1 unit), times in s; a^1 … a^L = 1, 2, 3 … 3, 4 from the figure's edge labels (its text's \"ω_a = 1 except ω_a^2 = ω_a^L = 2\" contradicts them and its own reasoning); ours: ā = a, a^0 = 0, no overheads. At M = 8 MiB rotor and optimal take 3n − 1 s; the report's non-persistent T0 = 2n + 2 s runs in Remat with a release of the checkpoint a^1, an op optimal does not search (docs/examples.md)", n.saturating_sub(1)),
        input_bytes: 0,
        input_gradient_bytes: 0,
        bandwidth_bytes_per_s: None,
        stages,
        ..Chain::default()
    }
}

/// The report's non-persistent schedule T0 on [`nonpersistent_chain`]`(n)`
/// in Remat's operations (2k + 4 = 2n + 2 s, peak 8 MiB): a^1 kept as a
/// checkpoint through the forward pass (F_ck^2), then, at the second F^2
/// (an F_all^2, whose ā^2 serves every later backward), a^1 released; at
/// the end F_all^1 recomputes it for B^2 and B^1. Remat's F_∅ never drops a
/// checkpoint, so the release is the one op outside F/B that it needs.
pub fn nonpersistent_t0(n: usize) -> Vec<Op> {
    let l_last = n + 2;
    let mut ops = vec![
        Op::ForwardCheckpoint { stage: 1 },
        Op::ForwardCheckpoint { stage: 2 },
    ];
    ops.extend((3..l_last).map(|stage| Op::ForwardNone { stage }));
    ops.push(Op::forward_all(l_last));
    ops.push(Op::Backward { stage: l_last });
    ops.push(Op::forward_all(2));
    ops.push(Op::Release {
        stage: 1,
        tensor: TensorKind::Output,
    });
    for l in (3..l_last).rev() {
        ops.extend((3..l).map(|stage| Op::ForwardNone { stage }));
        ops.push(Op::forward_all(l));
        ops.push(Op::Backward { stage: l });
    }
    ops.push(Op::forward_all(1));
    ops.push(Op::Backward { stage: 2 });
    ops.push(Op::Backward { stage: 1 });
    ops
}

fn compute_stage(name: String, flops: f64, output_bytes: u64, saved_bytes: u64) -> Stage {
    let forward = flops / FLOPS_PER_S;
    Stage::new(name, forward, 2.0 * forward, output_bytes, saved_bytes)
}

fn memory_stage(name: String, moved_bytes: u64, output_bytes: u64, saved_bytes: u64) -> Stage {
    let forward = moved_bytes as f64 / MEMORY_BYTES_PER_S;
    Stage::new(name, forward, 2.0 * forward, output_bytes, saved_bytes)
}

fn signed(bytes: u64) -> i64 {
    i64::try_from(bytes).expect("example sizes are far below 8 EiB")
}

/// The last stage of a classifier: logits and cross-entropy. Autograd keeps
/// one copy of the logits (log-softmax's output, which its backward reads);
/// the FC's input is the stage input, held apart. B^ℓ allocates ∂W (see
/// [`with_weight_gradient`]). Its output is the scalar loss.
fn classifier_loss(name: &str, batch: u64, features: u64, classes: u64) -> Stage {
    let flops = 2.0 * (batch * features * classes) as f64;
    let logits = batch * classes * F32;
    let mut s = compute_stage(name.into(), flops, F32, logits + F32);
    s.gradient_bytes = F32;
    with_weight_gradient(s, features * classes)
}

/// B^ℓ allocates the parameter gradient ∂W^ℓ (PyTorch creates `.grad` in the
/// backward), which the chain holds nowhere else: counted as backward
/// overhead, as the H100 reference measured it (392 MiB in VGG's fc6).
fn with_weight_gradient(mut s: Stage, parameters: u64) -> Stage {
    s.backward_overhead_bytes += signed(parameters * F32);
    s
}

/// VGG-19 (Simonyan & Zisserman, configuration E) as torchvision builds it:
/// 16 conv3×3 + ReLU stages, 5 max-pools, fc6 (avgpool, FC, ReLU, dropout),
/// fc7 (FC, ReLU, dropout) and fc8 with the loss.
///
/// The ReLUs are in place, so a conv stage keeps ā = a: the ReLU's output,
/// which overwrote the conv's and is read by both backward ops (the conv's
/// input is a^{ℓ−1}, held apart). A pool keeps its output and int64 indices
/// (3 × a). fc6 keeps the 7×7 average-pool output (its FC's input), the
/// ReLU output and the dropout output and mask (1 byte per value).
/// Overheads, rough: a conv's forward uses a cuDNN workspace of 2 × a^ℓ
/// where its input has 64 channels or more (what cuDNN chose on the H100:
/// 784 MiB in conv1_2), and its backward a gradient of a^ℓ's size (the
/// ReLU's) next to δ^ℓ and ā^ℓ, plus ∂W.
pub fn vgg19() -> Chain {
    let batch = 32u64;
    let cfg: [&[u64]; 5] = [&[64, 64], &[128, 128], &[256; 4], &[512; 4], &[512; 4]];
    let (mut c, mut hw) = (3u64, 224u64);
    let mut stages = Vec::new();
    for (block, convs) in cfg.iter().enumerate() {
        for (i, &out) in convs.iter().enumerate() {
            let flops = 2.0 * (batch * c * out * 9 * hw * hw) as f64;
            let a = batch * out * hw * hw * F32;
            let mut s = compute_stage(format!("conv{}_{}", block + 1, i + 1), flops, a, a);
            if c >= 64 {
                s.forward_overhead_bytes = signed(2 * a);
            }
            s.backward_overhead_bytes = signed(a);
            stages.push(with_weight_gradient(s, c * out * 9 + out));
            c = out;
        }
        let input = batch * c * hw * hw * F32;
        hw /= 2;
        let a = batch * c * hw * hw * F32;
        stages.push(memory_stage(
            format!("pool{}", block + 1),
            input + a,
            a,
            3 * a,
        ));
    }
    let mut features = c * hw * hw;
    for i in 6..=7 {
        let a = batch * 4096 * F32;
        // ReLU (in place) and dropout outputs, and the dropout's bool mask.
        let mut saved = 2 * a + a / 4;
        if i == 6 {
            // The 7×7 average pool makes a new tensor, the FC's input.
            saved += batch * features * F32;
        }
        let flops = 2.0 * (batch * features * 4096) as f64;
        let s = compute_stage(format!("fc{i}"), flops, a, saved);
        stages.push(with_weight_gradient(s, features * 4096 + 4096));
        features = 4096;
    }
    stages.push(classifier_loss("fc8 + loss", batch, features, 1000));
    Chain {
        name: "VGG-19, batch 32, 224 px (analytic)".into(),
        source: "analytic, rough: sizes from torchvision's VGG-19 (fp32, batch 32, 224 px; ReLUs in place so a conv stage keeps ā = a, pools keep int64 indices, dropout masks, one copy of the logits); overheads are rules of thumb: cuDNN workspace 2 × a^ℓ in a conv's forward (input ≥ 64 channels), a^ℓ + ∂W in its backward, ∂W in an FC's backward; δ^0 = 0 (the image batch needs no gradient); times = FLOPs / 10 TFLOP/s (V100-class), pools = bytes / 800 GB/s, backward = 2 × forward (an H100 measured 12× faster: see example:vgg19-h100)".into(),
        input_bytes: batch * 3 * 224 * 224 * F32,
        input_gradient_bytes: 0,
        bandwidth_bytes_per_s: Some(PCIE3_X16),
        stages,
        ..Chain::default()
    }
}

/// ResNet-50 (He et al. 2016) as torchvision builds it (v1.5: the stride on
/// the 3×3 conv): the stem (conv7×7, BN, ReLU, max-pool), 16 bottleneck
/// blocks [3, 4, 6, 3], and global pooling + FC + loss.
///
/// The ReLUs and the residual addition are in place, so a block keeps, per
/// conv, the conv output (BN's input) and the BN output that the ReLU
/// overwrote (the next conv's input); for the third conv its output and the
/// block output (BN output + shortcut, then ReLU, all in place); and the
/// projection shortcut's conv output where there is one (its BN output is
/// added in place). The stem keeps conv and BN/ReLU outputs, and the pool's
/// output and int64 indices. Overheads, rough: a forward workspace of a^ℓ
/// per block (2 × a^ℓ in a layer's first block and the stem), about what an
/// H100 showed; ∂W in the backward.
pub fn resnet50() -> Chain {
    let batch = 32u64;
    let mut stages = Vec::new();
    // Stem at 112×112 then pooled to 56×56.
    let stem = batch * 64 * 112 * 112 * F32;
    let pooled = batch * 64 * 56 * 56 * F32;
    let stem_flops = 2.0 * (batch * 3 * 64 * 49 * 112 * 112) as f64;
    let mut s = compute_stage("stem".into(), stem_flops, pooled, 2 * stem + 3 * pooled);
    s.forward_overhead_bytes = signed(2 * stem);
    stages.push(with_weight_gradient(s, 3 * 64 * 49 + 2 * 64));
    let layers = [
        (3usize, 64u64, 56u64),
        (4, 128, 28),
        (6, 256, 14),
        (3, 512, 7),
    ];
    let mut c_in = 64u64;
    let mut hw_in = 56u64;
    for (li, &(blocks, width, hw)) in layers.iter().enumerate() {
        for b in 0..blocks {
            let out_c = 4 * width;
            let px_in = batch * hw_in * hw_in;
            let px = batch * hw * hw;
            // torchvision v1.5: the 1×1 reduce runs at the input resolution,
            // the 3×3 carries the stride.
            let mut flops = 2.0 * (px_in * c_in * width) as f64
                + 2.0 * (px * width * width * 9) as f64
                + 2.0 * (px * width * out_c) as f64;
            let mut parameters = c_in * width + width * width * 9 + width * out_c;
            let out = px * out_c * F32;
            // conv1, conv2: conv and BN/ReLU outputs; conv3: its output, and
            // the block output.
            let mut saved = 2 * px_in * width * F32 + 2 * px * width * F32 + px * out_c * F32 + out;
            if b == 0 {
                // The projection shortcut: its conv output (BN's input).
                flops += 2.0 * (px * c_in * out_c) as f64;
                parameters += c_in * out_c;
                saved += px * out_c * F32;
            }
            let mut s = compute_stage(format!("layer{}.{}", li + 1, b), flops, out, saved);
            s.forward_overhead_bytes = signed(if b == 0 { 2 * out } else { out });
            stages.push(with_weight_gradient(s, parameters));
            c_in = out_c;
            hw_in = hw;
        }
    }
    let pooled_head = batch * 2048 * F32;
    let mut head = classifier_loss("avgpool + fc + loss", batch, 2048, 1000);
    head.saved_bytes += pooled_head;
    head.forward_seconds += (batch * 2048 * 49 * F32) as f64 / MEMORY_BYTES_PER_S;
    head.backward_seconds = 2.0 * head.forward_seconds;
    stages.push(head);
    Chain {
        name: "ResNet-50, batch 32, 224 px (analytic)".into(),
        source: "analytic, rough: sizes from torchvision's ResNet-50 (fp32, batch 32, 224 px; ReLUs and the residual addition in place, so a block keeps each conv output and each BN/ReLU output but the last, the pool keeps int64 indices, one copy of the logits); overheads are rules of thumb: a forward workspace of a^ℓ per block (2 × a^ℓ in a layer's first block and the stem), ∂W in the backward; δ^0 = 0 (the image batch needs no gradient); times = FLOPs / 10 TFLOP/s (V100-class), backward = 2 × forward (an H100 measured 2.4× faster: see example:resnet50-h100)".into(),
        input_bytes: batch * 3 * 224 * 224 * F32,
        input_gradient_bytes: 0,
        bandwidth_bytes_per_s: Some(PCIE3_X16),
        stages,
        ..Chain::default()
    }
}

/// A GPT-2-small-shaped decoder (h = 768, 12 heads, 12 blocks, vocabulary
/// 50257, tied embedding), batch 4, sequence 1024, fp32, attention by
/// PyTorch's `scaled_dot_product_attention` with its memory-efficient kernel
/// (the default on a GPU): no s × s attention scores are kept. A block keeps
/// (in values) LN1 out sbh, QKV 3sbh, attention out sbh, projection out sbh,
/// LN2 out sbh, FC1 out 4sbh, GELU out 4sbh, FC2 out sbh, and the kernel's
/// log-sum-exp (b · heads · s). FLOPs per block: 24·b·s·h² + 4·b·s²·h. The
/// head keeps LN_f's output and one copy of the logits (log-softmax's); while
/// it runs, the logits and the loss's temporaries take about two more copies
/// (rough; the H100 showed 1.5 GiB). ∂W in every backward (the embedding's
/// is dense: 147 MiB).
pub fn gpt2() -> Chain {
    let (b, s, h, heads, vocab) = (4u64, 1024u64, 768u64, 12u64, 50257u64);
    let sbh = s * b * h;
    let mut stages = Vec::new();
    let embed_out = sbh * F32;
    let embedding = memory_stage("embedding".into(), 2 * embed_out, embed_out, embed_out);
    stages.push(with_weight_gradient(embedding, vocab * h + s * h));
    for i in 0..12 {
        let values = sbh * (1 + 3 + 1 + 1 + 1 + 4 + 4 + 1) + b * heads * s;
        let flops = (24 * b * s * h * h + 4 * b * s * s * h) as f64;
        let block = compute_stage(format!("block {i}"), flops, sbh * F32, values * F32);
        stages.push(with_weight_gradient(block, 12 * h * h + 13 * h));
    }
    let logits = s * b * vocab * F32;
    let mut head = compute_stage(
        "ln_f + lm_head + loss".into(),
        2.0 * (s * b * h * vocab) as f64,
        F32,
        sbh * F32 + logits,
    );
    head.gradient_bytes = F32;
    head.forward_overhead_bytes = signed(2 * logits);
    head.backward_overhead_bytes = signed(2 * logits);
    stages.push(head);
    Chain {
        name: "GPT-2 style, 12 blocks, batch 4, seq 1024 (analytic)".into(),
        source: "analytic, rough: sizes from a GPT-2-small-shaped decoder (fp32, batch 4, seq 1024; memory-efficient attention keeps no attention scores — the math backend keeps one copy, see example:gpt2-h100-math; the head keeps one copy of the logits and needs about two more while it runs); ∂W in every backward; times = FLOPs / 10 TFLOP/s (V100-class), backward = 2 × forward (an H100 measured 4× faster: see example:gpt2-h100-efficient)".into(),
        input_bytes: s * b * 8,
        input_gradient_bytes: 0,
        bandwidth_bytes_per_s: Some(PCIE3_X16),
        stages,
        ..Chain::default()
    }
}

/// [`gpt2`] with a menu on every block: the selective-checkpointing
/// policies torchtitan offers, each keeping part of the block's ā and
/// recomputing the rest in its backward (issue 41). A block's ā is, in
/// units of sbh fp32 values: ln_1 1, the qkv matmul 3, attention 1 (and
/// its log-sum-exp), the projection 1, ln_2 1, the fc matmul 4, GELU 4,
/// the output 1 (the input is held apart). Recomputing a matmul costs its
/// FLOPs at 10 TFLOP/s; a pointwise op or a layernorm its bytes at
/// 800 GB/s, read and written:
///
/// * `save_mm_attention`: keeps qkv, attention, projection, fc and the
///   output (10 sbh + lse); recomputes both layernorms and GELU;
/// * `save_every_other_mm`: keeps qkv, attention, fc and the output
///   (9 sbh + lse); recomputes the projection and the second MLP matmul
///   (8 bsh² of the block's 24 bsh² matmul FLOPs) and the pointwise ops;
/// * `save_attention`: keeps attention and the output (2 sbh + lse);
///   recomputes every matmul but attention's;
/// * `save_nothing`: keeps the output; recomputes the whole block.
pub fn gpt2_sac() -> Chain {
    let mut chain = gpt2();
    let (b, s, h, heads) = (4u64, 1024u64, 768u64, 12u64);
    let sbh = s * b * h * F32;
    let lse = b * heads * s * F32;
    let matmul = |flops: u64| flops as f64 / FLOPS_PER_S;
    // Read and written once each: a layernorm or GELU over k sbh values.
    let pointwise = |k: u64| (2 * k * sbh) as f64 / MEMORY_BYTES_PER_S;
    let cheap = pointwise(1 + 1 + 4);
    for stage in chain
        .stages
        .iter_mut()
        .filter(|st| st.name.starts_with("block"))
    {
        // B^ℓ recomputes what was dropped before it runs (a non-reentrant
        // checkpoint recomputes the block at the first unpack), so while B^ℓ
        // runs the dropped part is back: its transient grows by it.
        let (classic, o_b) = (stage.saved_bytes, stage.backward_overhead_bytes);
        let option = |policy: &str, saved: u64, extra: f64| MenuOption {
            policy: policy.into(),
            saved_bytes: saved,
            backward_extra_seconds: extra,
            backward_overhead_bytes: o_b + signed(classic - saved),
            forward_overhead_bytes: None,
        };
        stage.menu = vec![
            option("save_mm_attention", 10 * sbh + lse, cheap),
            option(
                "save_every_other_mm",
                9 * sbh + lse,
                matmul(8 * b * s * h * h) + cheap,
            ),
            option(
                "save_attention",
                2 * sbh + lse,
                matmul(24 * b * s * h * h) + cheap,
            ),
            option("save_nothing", sbh, stage.forward_seconds),
        ];
    }
    chain.name = "GPT-2 style with selective-checkpointing menus (analytic)".into();
    chain.source = format!(
        "{}; each block's menu: torchtitan's selective-checkpointing policies, sizes from the block's saved tensors, recomputation at 10 TFLOP/s (matmuls) and 800 GB/s (pointwise)",
        chain.source
    );
    chain
}

/// A heterogeneous chain of `n` stages for benchmarks and stress tests:
/// outputs of 64–640 MiB, ā up to 4× the output, forward 1–10 ms, backward
/// 1.5–2.5× the forward, drawn from a fixed linear congruential sequence so
/// every run sees the same chain.
pub fn synthetic(n: usize) -> Chain {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 33) as f64) / (1u64 << 31) as f64
    };
    let stages = (0..n)
        .map(|i| {
            let out = ((1.0 + 9.0 * next()) * 64.0 * 1048576.0) as u64;
            let saved = out + ((3.0 * next()) * out as f64) as u64;
            let f = 1e-3 * (1.0 + 9.0 * next());
            Stage::new(format!("s{i}"), f, f * (1.5 + next()), out, saved)
        })
        .collect();
    Chain {
        name: format!("synthetic {n}"),
        source: "synthetic: sizes and times from a fixed pseudo-random sequence".into(),
        input_bytes: mib(64),
        input_gradient_bytes: mib(64),
        bandwidth_bytes_per_s: Some(PCIE3_X16),
        stages,
        ..Chain::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_is_valid_and_named() {
        // Could fail if a data file stopped parsing or validating, lost its
        // provenance, or two examples shared a name. Mutation tried: a
        // measured file's `source` emptied / an analytic one starting with
        // "estimated": this test failed.
        assert_eq!(
            provenance_of("remat-profile 0.1.0: resnet18 …"),
            Some(Provenance::Measured)
        );
        assert_eq!(
            provenance_of("converted from rotor's chain parameters"),
            None
        );
        for e in EXAMPLES {
            let chain = e.chain();
            chain.validate().unwrap();
            assert_eq!(
                provenance_of(&chain.source),
                Some(e.provenance),
                "{}: {}",
                e.name,
                chain.source
            );
            assert!(e.about.starts_with(e.provenance.label()), "{}", e.name);
            assert_eq!(by_name(e.name).as_ref(), Some(&chain));
            assert_eq!(EXAMPLES.iter().filter(|o| o.name == e.name).count(), 1);
        }
        assert!(by_name("nope").is_none());
    }

    #[test]
    fn measured_examples_say_where_and_how() {
        // Each measured chain names its device, its library and version, its
        // batch, when it was measured and how (the method): the provenance a
        // user needs to trust or discount it.
        for e in EXAMPLES
            .iter()
            .filter(|e| e.provenance == Provenance::Measured)
        {
            let source = e.chain().source;
            let any = |words: &[&str]| words.iter().any(|w| source.contains(w));
            assert!(
                any(&["H100", "device=cpu", "device=cuda"]),
                "{}: no device",
                e.name
            );
            assert!(
                any(&["PyTorch 2.11", "libtorch 2.13", "PyTorch 2.13"]),
                "{}: no library",
                e.name
            );
            assert!(any(&["2026-"]), "{}: no date", e.name);
            assert!(any(&["batch"]), "{}: no batch", e.name);
            assert!(any(&["Method:", "method:"]), "{}: no method", e.name);
            assert!(
                any(&[
                    "caching-allocator",
                    "counting CPU allocator",
                    "allocator deltas"
                ]),
                "{}: sizes not said to be allocator deltas",
                e.name
            );
        }
    }

    /// The profile an example carries agrees with what its own texts say:
    /// the batch (and sequence) in `about` and in the chain's `source`, and,
    /// for the CPU profiles, the parameter-gradient sum the source states.
    ///
    /// Could fail if metadata drifted from the data; mutations tried: VGG-19
    /// H100 at batch 16, the GPT-2 math chain without its sequence, the
    /// ResNet-18 count from ResNet-50's: each failed here.
    #[test]
    fn profiles_agree_with_the_examples_texts() {
        for e in EXAMPLES {
            let Some(p) = e.profile else {
                assert_eq!(e.provenance, Provenance::HandMade, "{}: no profile", e.name);
                continue;
            };
            let source = e.chain().source;
            let batch = [format!("batch {}", p.batch), format!("batch={}", p.batch)];
            assert!(e.about.contains(&batch[0]), "{}: {}", e.name, e.about);
            if e.provenance == Provenance::Measured {
                assert!(
                    batch.iter().any(|b| source.contains(b.as_str())),
                    "{}",
                    e.name
                );
            }
            match p.sequence {
                Some(s) => assert!(e.about.contains(&format!("seq {s}")), "{}", e.name),
                None => assert!(!e.about.contains("seq "), "{}", e.name),
            }
            assert!(e.about.contains(p.precision.name()), "{}", e.name);
            if let Some(sum) = source
                .split("(sum ")
                .nth(1)
                .and_then(|t| t.split(' ').next())
            {
                let gradient_bytes: u64 = sum.parse().unwrap();
                assert_eq!(p.parameters * 4, gradient_bytes, "{}", e.name);
            }
        }
        assert_eq!(Precision::from_name("bf16"), Some(Precision::Bf16));
        assert_eq!(Precision::from_name("fp16"), None);
    }

    fn measured_twin(analytic: &Chain, name: &str) -> Chain {
        let measured = by_name(name).unwrap();
        assert_eq!(analytic.len(), measured.len());
        for (a, m) in analytic.stages.iter().zip(&measured.stages) {
            assert_eq!(a.name, m.name);
        }
        measured
    }

    /// The analytic sizes follow what autograd keeps, stage by stage.
    ///
    /// Could fail if an analytic chain kept what PyTorch does not: mutation
    /// tried: VGG's ReLU not in place again (ā = 2a), fc6 without its
    /// average-pool output, ResNet's BN outputs kept next to the ReLU's:
    /// each failed here.
    #[test]
    fn analytic_saved_bytes_match_the_h100_measurements() {
        for (name, twin) in [
            ("vgg19", "vgg19-h100"),
            ("resnet50", "resnet50-h100"),
            ("gpt2", "gpt2-h100-efficient"),
        ] {
            let analytic = by_name(name).unwrap();
            let measured = measured_twin(&analytic, twin);
            for (a, m) in analytic.stages.iter().zip(&measured.stages) {
                // The allocator rounds to 512 B blocks and keeps a few small
                // buffers (BN statistics, the loss): at most 2 MiB or 1 %.
                let slack = (m.saved_bytes / 100).max(2 << 20);
                assert!(
                    a.saved_bytes.abs_diff(m.saved_bytes) <= slack,
                    "{name} {}: ā {} vs measured {}",
                    a.name,
                    a.saved_bytes,
                    m.saved_bytes
                );
                assert!(
                    a.output_bytes.abs_diff(m.output_bytes) <= slack,
                    "{name} {}: a",
                    a.name
                );
            }
            assert_eq!(analytic.input_bytes, measured.input_bytes, "{name}");
            assert_eq!(
                analytic.input_gradient_bytes, measured.input_gradient_bytes,
                "{name}"
            );
        }
    }

    #[test]
    fn vgg19_has_the_architecture_s_shape() {
        let c = vgg19();
        // 16 convs + 5 pools + fc6 + fc7 + fc8/loss.
        assert_eq!(c.len(), 24);
        // conv1_1 output: 32 × 64 × 224 × 224 × 4 bytes.
        assert_eq!(c.stage(1).output_bytes, 32 * 64 * 224 * 224 * 4);
        // In-place ReLU: the conv stage keeps only its output.
        assert_eq!(c.stage(1).saved_bytes, c.stage(1).output_bytes);
        // conv1_2's cuDNN workspace: 2 × a = 784 MiB.
        assert_eq!(c.stage(2).forward_overhead_bytes, 784 << 20);
        assert_eq!(c.stage(c.len()).output_bytes, 4);
    }

    #[test]
    fn resnet50_has_18_stages() {
        let c = resnet50();
        assert_eq!(c.len(), 18);
        assert_eq!(c.stage(17).output_bytes, 32 * 2048 * 7 * 7 * 4);
    }
}
