//! The built-in networks as chains of stages, written with tch's `nn`.
//!
//! A stage is a function of its input a^{ℓ-1}; the last one computes the
//! loss (a scalar) against targets fixed when the net is built. Train mode
//! throughout; ReLUs are in place where torchvision's are (so a conv+ReLU
//! stage saves only its output), dropout is replayed on recomputation by
//! seeding each stage's forward (see `runner`).

use super::device;
use super::net::{Net, StageFn};
use crate::models::ModelSpec;
use tch::nn::{self, ModuleT};
use tch::{Kind, Tensor};

type Stages = Vec<(String, StageFn)>;
type InputFn = Box<dyn Fn() -> Tensor>;

/// Builds `spec`'s network with a fixed seed (same weights every time).
pub fn build(spec: &ModelSpec) -> Net {
    if let Some(ts) = &spec.torchscript {
        // main.rs loaded and ran it once already (torchscript::check).
        return super::torchscript::build(ts)
            .unwrap_or_else(|e| panic!("the TorchScript model loaded before: {e}"));
    }
    tch::manual_seed(42);
    // On the selected device (`device::select`), as every tensor below.
    let vs = nn::VarStore::new(device::tch_device());
    let b = spec.batch;
    let (stages, input): (Stages, InputFn) = match spec.name.as_str() {
        "tiny" => (tiny(&vs.root(), b, spec.image), image_input(b, spec.image)),
        "resnet18" => (
            resnet(&vs.root(), b, false, &[2, 2, 2, 2]),
            image_input(b, spec.image),
        ),
        "resnet50" => (
            resnet(&vs.root(), b, true, &[3, 4, 6, 3]),
            image_input(b, spec.image),
        ),
        "vgg19" => (vgg19(&vs.root(), b, spec.image), image_input(b, spec.image)),
        "gpt2" => {
            let cfg = Gpt2 {
                layers: 12,
                dim: 768,
                heads: 12,
                vocab: 50257,
                max_seq: 1024,
            };
            (
                gpt2(&vs.root(), b, spec.seq, &cfg),
                token_input(b, spec.seq, cfg.vocab),
            )
        }
        other => unreachable!("ModelSpec::new accepts only built-in models, got {other}"),
    };
    Net::from_parts(vs, stages, input)
}

fn image_input(b: i64, px: i64) -> Box<dyn Fn() -> Tensor> {
    Box::new(move || Tensor::randn([b, 3, px, px], (Kind::Float, device::tch_device())))
}

fn token_input(b: i64, seq: i64, vocab: i64) -> Box<dyn Fn() -> Tensor> {
    Box::new(move || Tensor::randint(vocab, [b, seq], (Kind::Int64, device::tch_device())))
}

fn targets(b: i64, classes: i64) -> Tensor {
    Tensor::randint(classes, [b], (Kind::Int64, device::tch_device()))
}

fn conv(p: nn::Path, cin: i64, cout: i64, k: i64, stride: i64, pad: i64, bias: bool) -> nn::Conv2D {
    nn::conv2d(
        p,
        cin,
        cout,
        k,
        nn::ConvConfig {
            stride,
            padding: pad,
            bias,
            ..Default::default()
        },
    )
}

fn relu_(t: Tensor) -> Tensor {
    let mut t = t;
    t.relu_()
}

fn seq_stage(name: impl Into<String>, m: nn::SequentialT) -> (String, StageFn) {
    (
        name.into(),
        Box::new(move |x: &Tensor| m.forward_t(x, true)),
    )
}

/// Six conv+ReLU stages (8 channels, in-place ReLUs), a max-pool and a
/// linear+loss stage: deep enough that rematerialization saves memory
/// (M_low < M_high), small enough for tests.
fn tiny(p: &nn::Path, b: i64, px: i64) -> Vec<(String, StageFn)> {
    let mut stages: Vec<(String, StageFn)> = Vec::new();
    for i in 1..=6 {
        let c = conv(
            p / format!("c{i}"),
            if i == 1 { 3 } else { 8 },
            8,
            3,
            1,
            1,
            true,
        );
        stages.push((
            format!("conv{i}"),
            Box::new(move |x: &Tensor| relu_(x.apply(&c))),
        ));
    }
    let side = px / 2;
    let fc = nn::linear(p / "fc", 8 * side * side, 10, Default::default());
    let y = targets(b, 10);
    stages.push((
        "pool".into(),
        Box::new(|x: &Tensor| x.max_pool2d([2, 2], [2, 2], [0, 0], [1, 1], false)),
    ));
    stages.push((
        "fc+loss".into(),
        Box::new(move |x: &Tensor| x.flatten(1, -1).apply(&fc).cross_entropy_for_logits(&y)),
    ));
    stages
}

/// ResNet (He et al. 2016), torchvision's layout: basic blocks (18/34) or
/// bottlenecks (50+), batch norm, in-place ReLUs, one block per stage.
fn resnet(p: &nn::Path, b: i64, bottleneck: bool, blocks: &[usize]) -> Vec<(String, StageFn)> {
    let mut stages: Vec<(String, StageFn)> = Vec::new();
    let bn = |p: nn::Path, c: i64| nn::batch_norm2d(p, c, Default::default());
    let stem = nn::seq_t()
        .add(conv(p / "conv1", 3, 64, 7, 2, 3, false))
        .add(bn(p / "bn1", 64))
        .add_fn(|x| relu_(x.shallow_clone()));
    stages.push(seq_stage("stem", stem));
    stages.push((
        "maxpool".into(),
        Box::new(|x: &Tensor| x.max_pool2d([3, 3], [2, 2], [1, 1], [1, 1], false)),
    ));
    let expansion = if bottleneck { 4 } else { 1 };
    let mut cin = 64;
    for (layer, &n) in blocks.iter().enumerate() {
        let width = 64 << layer;
        for i in 0..n {
            let stride = if layer > 0 && i == 0 { 2 } else { 1 };
            let q = p / format!("layer{}", layer + 1) / i;
            let cout = width * expansion;
            let main = if bottleneck {
                nn::seq_t()
                    .add(conv(&q / "conv1", cin, width, 1, 1, 0, false))
                    .add(bn(&q / "bn1", width))
                    .add_fn(|x| relu_(x.shallow_clone()))
                    .add(conv(&q / "conv2", width, width, 3, stride, 1, false))
                    .add(bn(&q / "bn2", width))
                    .add_fn(|x| relu_(x.shallow_clone()))
                    .add(conv(&q / "conv3", width, cout, 1, 1, 0, false))
                    .add(bn(&q / "bn3", cout))
            } else {
                nn::seq_t()
                    .add(conv(&q / "conv1", cin, width, 3, stride, 1, false))
                    .add(bn(&q / "bn1", width))
                    .add_fn(|x| relu_(x.shallow_clone()))
                    .add(conv(&q / "conv2", width, width, 3, 1, 1, false))
                    .add(bn(&q / "bn2", width))
            };
            let down = (stride != 1 || cin != cout).then(|| {
                nn::seq_t()
                    .add(conv(&q / "downsample" / 0, cin, cout, 1, stride, 0, false))
                    .add(bn(&q / "downsample" / 1, cout))
            });
            cin = cout;
            stages.push((
                format!("layer{}.{i}", layer + 1),
                Box::new(move |x: &Tensor| {
                    let mut y = main.forward_t(x, true);
                    let id = match &down {
                        Some(d) => d.forward_t(x, true),
                        None => x.shallow_clone(),
                    };
                    // torchvision: out += identity; relu(out), both in place.
                    let _ = y.g_add_(&id);
                    y.relu_()
                }),
            ));
        }
    }
    let fc = nn::linear(p / "fc", cin, 1000, Default::default());
    let y = targets(b, 1000);
    stages.push((
        "head+loss".into(),
        Box::new(move |x: &Tensor| {
            x.adaptive_avg_pool2d([1, 1])
                .flatten(1, -1)
                .apply(&fc)
                .cross_entropy_for_logits(&y)
        }),
    ));
    stages
}

/// VGG-19 (configuration E): 16 conv+ReLU stages, each max-pool a stage of
/// its own (as Hong et al. cut it), then three linear stages, the last with
/// the loss. No adaptive pooling: the classifier takes 512·(px/32)² features.
fn vgg19(p: &nn::Path, b: i64, px: i64) -> Vec<(String, StageFn)> {
    const CFG: &[i64] = &[
        64, 64, 0, 128, 128, 0, 256, 256, 256, 256, 0, 512, 512, 512, 512, 0, 512, 512, 512, 512, 0,
    ];
    let mut stages: Vec<(String, StageFn)> = Vec::new();
    let (mut cin, mut block, mut k, mut idx) = (3, 1, 1, 0);
    for &c in CFG {
        if c == 0 {
            stages.push((
                format!("pool{block}"),
                Box::new(|x: &Tensor| x.max_pool2d([2, 2], [2, 2], [0, 0], [1, 1], false)),
            ));
            block += 1;
            k = 1;
        } else {
            let m = conv(p / "features" / idx, cin, c, 3, 1, 1, true);
            stages.push((
                format!("conv{block}_{k}"),
                Box::new(move |x: &Tensor| relu_(x.apply(&m))),
            ));
            cin = c;
            k += 1;
        }
        idx += 1;
    }
    let side = px / 32;
    let fc1 = nn::linear(
        p / "classifier" / 0,
        512 * side * side,
        4096,
        Default::default(),
    );
    let fc2 = nn::linear(p / "classifier" / 3, 4096, 4096, Default::default());
    let fc3 = nn::linear(p / "classifier" / 6, 4096, 1000, Default::default());
    let y = targets(b, 1000);
    stages.push((
        "fc1".into(),
        Box::new(move |x: &Tensor| relu_(x.flatten(1, -1).apply(&fc1)).dropout(0.5, true)),
    ));
    stages.push((
        "fc2".into(),
        Box::new(move |x: &Tensor| relu_(x.apply(&fc2)).dropout(0.5, true)),
    ));
    stages.push((
        "fc3+loss".into(),
        Box::new(move |x: &Tensor| x.apply(&fc3).cross_entropy_for_logits(&y)),
    ));
    stages
}

struct Gpt2 {
    layers: i64,
    dim: i64,
    heads: i64,
    vocab: i64,
    max_seq: i64,
}

/// Weights drawn from N(0, stdev²), as GPT-2 initializes its embeddings.
fn normal(stdev: f64) -> nn::Init {
    nn::Init::Randn { mean: 0.0, stdev }
}

/// A GPT-2-style stack (Radford et al. 2019): token + position embedding,
/// pre-LayerNorm blocks (causal attention through
/// scaled_dot_product_attention, GELU MLP, dropout 0.1), and a head whose
/// output matrix is the token embedding (tied) with the loss.
fn gpt2(p: &nn::Path, b: i64, seq: i64, c: &Gpt2) -> Vec<(String, StageFn)> {
    let mut stages: Vec<(String, StageFn)> = Vec::new();
    let wte = p.var("wte", &[c.vocab, c.dim], normal(0.02));
    let wpe = p.var("wpe", &[c.max_seq, c.dim], normal(0.01));
    {
        let (wte, wpe) = (wte.shallow_clone(), wpe.shallow_clone());
        stages.push((
            "embedding".into(),
            Box::new(move |tokens: &Tensor| {
                let t = tokens.size()[1];
                let pos = Tensor::arange(t, (Kind::Int64, device::tch_device()));
                (Tensor::embedding(&wte, tokens, -1, false, false)
                    + Tensor::embedding(&wpe, &pos, -1, false, false))
                .dropout(0.1, true)
            }),
        ));
    }
    let (dim, heads) = (c.dim, c.heads);
    for i in 0..c.layers {
        let q = p / "h" / i;
        let ln1 = nn::layer_norm(&q / "ln_1", vec![dim], Default::default());
        let attn = nn::linear(&q / "c_attn", dim, 3 * dim, Default::default());
        let proj = nn::linear(&q / "c_proj", dim, dim, Default::default());
        let ln2 = nn::layer_norm(&q / "ln_2", vec![dim], Default::default());
        let fc = nn::linear(&q / "mlp_fc", dim, 4 * dim, Default::default());
        let out = nn::linear(&q / "mlp_proj", 4 * dim, dim, Default::default());
        stages.push((
            format!("block{i}"),
            Box::new(move |x: &Tensor| {
                let (bb, t) = (x.size()[0], x.size()[1]);
                let qkv = x.apply(&ln1).apply(&attn).split(dim, 2);
                let shape = |h: &Tensor| h.view([bb, t, heads, dim / heads]).transpose(1, 2);
                let a = Tensor::scaled_dot_product_attention::<Tensor>(
                    &shape(&qkv[0]),
                    &shape(&qkv[1]),
                    &shape(&qkv[2]),
                    None,
                    0.1,
                    true,
                    None,
                    false,
                );
                let a = a
                    .transpose(1, 2)
                    .contiguous()
                    .view([bb, t, dim])
                    .apply(&proj)
                    .dropout(0.1, true);
                let x = x + a;
                let m = x
                    .apply(&ln2)
                    .apply(&fc)
                    .gelu("tanh")
                    .apply(&out)
                    .dropout(0.1, true);
                x + m
            }),
        ));
    }
    let lnf = nn::layer_norm(p / "ln_f", vec![dim], Default::default());
    let y = Tensor::randint(c.vocab, [b * seq], (Kind::Int64, device::tch_device()));
    let vocab = c.vocab;
    stages.push((
        "head+loss".into(),
        Box::new(move |x: &Tensor| {
            x.apply(&lnf)
                .matmul(&wte.tr())
                .view([-1, vocab])
                .cross_entropy_for_logits(&y)
        }),
    ));
    stages
}
