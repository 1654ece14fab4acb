//! Built-in example chains, each with its provenance in `source`.
//!
//! Sizes are computed from the architectures (fp32, 4 bytes per value).
//! Times are a stated FLOP-based estimate, not measurements: a forward
//! operation takes FLOPs / 10 TFLOP/s (a V100-class GPU at about 70% of its
//! fp32 peak), a backward twice its forward (gradients for inputs and for
//! weights), and memory-bound layers (pooling, normalization, activations)
//! take the bytes they read and write / 800 GB/s. The profiler replaces these
//! with measured chains.

use crate::model::{Chain, Stage};

const FLOPS_PER_S: f64 = 10e12;
const MEMORY_BYTES_PER_S: f64 = 800e9;
const PCIE3_X16: f64 = 12e9;
const F32: u64 = 4;

/// Names accepted by [`by_name`], with one line each.
pub const NAMES: [(&str, &str); 4] = [
    (
        "teaching",
        "homogeneous 10-stage teaching chain (round numbers)",
    ),
    ("vgg19", "VGG-19, batch 32, 224×224 px, fp32 (analytic)"),
    (
        "resnet50",
        "ResNet-50, batch 32, 224×224 px, fp32 (analytic)",
    ),
    (
        "gpt2",
        "GPT-2-style transformer, 12 blocks, batch 4, seq 1024, fp32 (analytic)",
    ),
];

pub fn by_name(name: &str) -> Option<Chain> {
    match name {
        "teaching" => Some(teaching()),
        "vgg19" => Some(vgg19()),
        "resnet50" => Some(resnet50()),
        "gpt2" => Some(gpt2()),
        _ => None,
    }
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
        name: "teaching chain (10 stages)".into(),
        source: "hand-made: 10 identical stages, F 10 ms, B 20 ms, a 64 MiB, ā 128 MiB; loss folded into stage 10".into(),
        input_bytes: mib(64),
        input_gradient_bytes: mib(64),
        bandwidth_bytes_per_s: Some(PCIE3_X16),
        stages,
    }
}

fn compute_stage(name: String, flops: f64, output_bytes: u64, saved_bytes: u64) -> Stage {
    let forward = flops / FLOPS_PER_S;
    Stage::new(name, forward, 2.0 * forward, output_bytes, saved_bytes)
}

fn memory_stage(name: String, moved_bytes: u64, output_bytes: u64, saved_bytes: u64) -> Stage {
    let forward = moved_bytes as f64 / MEMORY_BYTES_PER_S;
    Stage::new(name, forward, 2.0 * forward, output_bytes, saved_bytes)
}

/// The last stage of a classifier: logits and cross-entropy. It keeps the
/// logits and the softmax; its output is the scalar loss.
fn classifier_loss(name: &str, batch: u64, features: u64, classes: u64) -> Stage {
    let flops = 2.0 * (batch * features * classes) as f64;
    let logits = batch * classes * F32;
    let mut s = compute_stage(name.into(), flops, F32, 2 * logits + F32);
    s.gradient_bytes = F32;
    s
}

/// VGG-19 (Simonyan & Zisserman, configuration E): 16 conv3×3+ReLU stages,
/// 5 max-pools, 2 FC+ReLU stages and the classifier with its loss.
/// ReLU is not in place: ā of a conv stage holds the conv output and the
/// ReLU output (2 × a); a pool keeps its output and int64 indices (3 × a).
pub fn vgg19() -> Chain {
    let batch = 32u64;
    let cfg: [&[u64]; 5] = [&[64, 64], &[128, 128], &[256; 4], &[512; 4], &[512; 4]];
    let (mut c, mut hw) = (3u64, 224u64);
    let mut stages = Vec::new();
    for (block, convs) in cfg.iter().enumerate() {
        for (i, &out) in convs.iter().enumerate() {
            let flops = 2.0 * (batch * c * out * 9 * hw * hw) as f64;
            let a = batch * out * hw * hw * F32;
            stages.push(compute_stage(
                format!("conv{}_{}", block + 1, i + 1),
                flops,
                a,
                2 * a,
            ));
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
        let flops = 2.0 * (batch * features * 4096) as f64;
        stages.push(compute_stage(format!("fc{i}"), flops, a, 2 * a));
        features = 4096;
    }
    stages.push(classifier_loss("fc8 + loss", batch, features, 1000));
    Chain {
        name: "VGG-19, batch 32, 224 px".into(),
        source: "analytic: sizes from the VGG-19 architecture (fp32, ReLU not in place); times = FLOPs / 10 TFLOP/s, memory-bound layers = bytes / 800 GB/s, backward = 2 × forward".into(),
        input_bytes: batch * 3 * 224 * 224 * F32,
        input_gradient_bytes: batch * 3 * 224 * 224 * F32,
        bandwidth_bytes_per_s: Some(PCIE3_X16),
        stages,
    }
}

/// ResNet-50 (He et al. 2016): the stem (conv7×7, BN, ReLU, max-pool), 16
/// bottleneck blocks [3, 4, 6, 3], and global pooling + FC + loss. A block
/// keeps every conv and BN output and its ReLU outputs (in place after BN is
/// not assumed), plus the projection shortcut's conv and BN where there is one.
pub fn resnet50() -> Chain {
    let batch = 32u64;
    let mut stages = Vec::new();
    // Stem at 112×112 then pooled to 56×56.
    let stem = batch * 64 * 112 * 112 * F32;
    let pooled = batch * 64 * 56 * 56 * F32;
    let stem_flops = 2.0 * (batch * 3 * 64 * 49 * 112 * 112) as f64;
    stages.push(compute_stage(
        "stem".into(),
        stem_flops,
        pooled,
        3 * stem + 3 * pooled,
    ));
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
            // conv, BN and ReLU outputs of each of the three convs.
            let mut saved = 3 * px_in * width * F32 + 3 * px * width * F32 + 3 * px * out_c * F32;
            if b == 0 {
                // The projection shortcut: conv and BN outputs.
                flops += 2.0 * (px * c_in * out_c) as f64;
                saved += 2 * px * out_c * F32;
            }
            let out = px * out_c * F32;
            stages.push(compute_stage(
                format!("layer{}.{}", li + 1, b),
                flops,
                out,
                saved.max(out),
            ));
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
        name: "ResNet-50, batch 32, 224 px".into(),
        source: "analytic: sizes from the ResNet-50 architecture (fp32; each block keeps its conv, BN and ReLU outputs); times = FLOPs / 10 TFLOP/s, backward = 2 × forward".into(),
        input_bytes: batch * 3 * 224 * 224 * F32,
        input_gradient_bytes: batch * 3 * 224 * 224 * F32,
        bandwidth_bytes_per_s: Some(PCIE3_X16),
        stages,
    }
}

/// A GPT-2-small-shaped decoder (h = 768, 12 heads, 12 blocks, vocabulary
/// 50257), batch 4, sequence 1024, fp32, no activation recomputation inside
/// attention. A block keeps (in values): LN1 out sbh, QKV 3sbh, scores and
/// softmax 2·a·s²·b, attention out sbh, projection out sbh, LN2 out sbh,
/// FC1 out 4sbh, GELU out 4sbh, FC2 out sbh. FLOPs per block:
/// 24·b·s·h² + 4·b·s²·h.
pub fn gpt2() -> Chain {
    let (b, s, h, heads, vocab) = (4u64, 1024u64, 768u64, 12u64, 50257u64);
    let sbh = s * b * h;
    let mut stages = Vec::new();
    let embed_out = sbh * F32;
    stages.push(memory_stage(
        "embedding".into(),
        2 * embed_out,
        embed_out,
        embed_out,
    ));
    for i in 0..12 {
        let values = sbh * (1 + 3 + 1 + 1 + 1 + 4 + 4 + 1) + 2 * heads * s * s * b;
        let flops = (24 * b * s * h * h + 4 * b * s * s * h) as f64;
        stages.push(compute_stage(
            format!("block {i}"),
            flops,
            sbh * F32,
            values * F32,
        ));
    }
    let logits = s * b * vocab * F32;
    let mut head = compute_stage(
        "ln_f + lm_head + loss".into(),
        2.0 * (s * b * h * vocab) as f64,
        F32,
        sbh * F32 + 2 * logits,
    );
    head.gradient_bytes = F32;
    stages.push(head);
    Chain {
        name: "GPT-2 style, 12 blocks, batch 4, seq 1024".into(),
        source: "analytic: sizes from a GPT-2-small-shaped decoder (fp32, attention scores kept); times = FLOPs / 10 TFLOP/s, backward = 2 × forward".into(),
        input_bytes: s * b * 8,
        input_gradient_bytes: 0,
        bandwidth_bytes_per_s: Some(PCIE3_X16),
        stages,
    }
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_is_valid_and_named() {
        for (name, _) in NAMES {
            let chain = by_name(name).unwrap();
            chain.validate().unwrap();
            assert!(!chain.source.is_empty());
        }
        assert!(by_name("nope").is_none());
    }

    #[test]
    fn vgg19_has_the_architecture_s_shape() {
        let c = vgg19();
        // 16 convs + 5 pools + fc6 + fc7 + fc8/loss.
        assert_eq!(c.len(), 24);
        // conv1_1 output: 32 × 64 × 224 × 224 × 4 bytes.
        assert_eq!(c.stage(1).output_bytes, 32 * 64 * 224 * 224 * 4);
        assert_eq!(c.stage(c.len()).output_bytes, 4);
    }

    #[test]
    fn resnet50_has_18_stages() {
        let c = resnet50();
        assert_eq!(c.len(), 18);
        assert_eq!(c.stage(17).output_bytes, 32 * 2048 * 7 * 7 * 4);
    }
}
