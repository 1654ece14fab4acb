"""Predicted against what the allocator shows, on models nobody here wrote
(issue 42, item 1): for each model (torchvision, timm, transformers; random
weights, built from configs) at a training size, and for both ways a loop
clears the parameter gradients (`zero_grad(set_to_none=True)`, PyTorch's
default, and `False`):

* the chain (`describe_chain(..., set_to_none=...)`) and its M_high
  (store-all's simulated peak) against one plain step's measured peak
  (`plain_step_peak(..., set_to_none=...)`: the allocator's events above the
  start, plus the batch);
* the step's *total* peak: the weights and buffers (and, with
  `set_to_none=False`, the gradients kept across steps) plus M_high, against
  the same plus the measured peak — what `torch.cuda.max_memory_allocated`
  would read with no optimizer state;
* rotor's plans at α = 0.1, 0.5, 0.9 between M_low and M_high, each run
  once through `checkpointed` and measured with `measure_step(...,
  set_to_none=...)`: measured against predicted.

The issue's bounds: total peak within ±3 %, plans within +3 % / −6 %.

    PYTHONPATH=.tools/libtorch:.tools/pydeps python3 scripts/allocator_table.py \\
        [--models resnet18,vit_tiny] [--json out.json]

Prints a Markdown table; one row per model and mode.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F


def ce(out, target):
    return F.cross_entropy(out, target)


def lm_loss(out, labels):
    logits = out.logits
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))


def mlm_loss(out, labels):
    logits = out.logits
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))


def _image(batch=16, px=96, classes=10):
    g = torch.Generator().manual_seed(0)
    return torch.randn(batch, 3, px, px, generator=g), torch.randint(0, classes, (batch,), generator=g)


def _tokens(batch=16, seq=64, vocab=1000):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (batch, seq), generator=g)
    return ids


def vision(make):
    def build():
        torch.manual_seed(0)
        model = make().train()
        x, y = _image()
        return model, x, y, ce
    return build


def lm(make, batch_extra=None):
    def build():
        torch.manual_seed(0)
        model = make().train()
        ids = _tokens()
        batch = {"input_ids": ids, "use_cache": False} if batch_extra is None else {"input_ids": ids, **batch_extra}
        return model, batch, ids, lm_loss if batch_extra is None else mlm_loss
    return build


def models():
    import timm
    import torchvision
    import transformers

    return {
        "resnet18": vision(lambda: torchvision.models.resnet18(num_classes=10)),
        "mobilenet_v3_small": vision(lambda: torchvision.models.mobilenet_v3_small(num_classes=10)),
        "efficientnet_b0": vision(lambda: torchvision.models.efficientnet_b0(num_classes=10)),
        "vgg11": vision(lambda: torchvision.models.vgg11(num_classes=10)),
        "vit_tiny": vision(lambda: timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=96,
                                                     num_classes=10)),
        "convnext_atto": vision(lambda: timm.create_model("convnext_atto", pretrained=False, num_classes=10)),
        "mixer_s16": vision(lambda: timm.create_model("mixer_s16_224", pretrained=False, img_size=96,
                                                      num_classes=10)),
        "gpt2": lm(lambda: transformers.GPT2LMHeadModel(transformers.GPT2Config(
            n_layer=4, n_embd=256, n_head=4, vocab_size=1000, n_positions=128, bos_token_id=0,
            eos_token_id=0))),
        "llama": lm(lambda: transformers.LlamaForCausalLM(transformers.LlamaConfig(
            num_hidden_layers=4, hidden_size=256, intermediate_size=688, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128))),
        "bert": lm(lambda: transformers.BertForMaskedLM(transformers.BertConfig(
            num_hidden_layers=4, hidden_size=256, intermediate_size=1024, num_attention_heads=4,
            vocab_size=1000, max_position_embeddings=128)), batch_extra={}),
    }


def _nbytes(tensors) -> int:
    seen = {}
    for t in tensors:
        st = t.untyped_storage()
        seen[st._cdata] = st.nbytes()
    return sum(seen.values())


def row(name, build, set_to_none: bool):
    import remat_torch

    model, batch, target, loss = build()
    t0 = time.perf_counter()
    chain = remat_torch.describe_chain(model, batch, target, loss=loss, repeat=1, progress=False,
                                       set_to_none=set_to_none)
    described = time.perf_counter() - t0
    weights = _nbytes([*model.parameters(), *model.buffers()])
    grads = _nbytes([p for p in model.parameters() if p.requires_grad])
    fixed = weights + (0 if set_to_none else grads)
    plain = remat_torch.plain_step_peak(model, batch, target, loss, set_to_none=set_to_none)["peak_bytes"]
    store_all = remat_torch.solve(chain, "store-all", "100%")
    m_high = store_all["predicted"]["peak_bytes"]
    plans = []
    low = None
    for alpha in (0.1, 0.5, 0.9):
        if low is None:
            # M_low: rotor's least budget (the CLI's m_low_bytes).
            lo, hi = 1, m_high
            while lo < hi:
                mid = (lo + hi) // 2
                try:
                    ok = remat_torch.solve(chain, "rotor", mid) is not None
                except ValueError:
                    ok = False
                lo, hi = (lo, mid) if ok else (mid + 1, hi)
            low = lo
        budget = low + round(alpha * (m_high - low))
        plan = remat_torch.solve(chain, "rotor", budget)
        if plan is None:
            continue
        step = remat_torch.checkpointed(model, plan, loss=loss)
        step(batch, target)
        _, measured = step.measure_step(batch, target, set_to_none=set_to_none)
        plans.append((alpha, plan["predicted"]["peak_bytes"], measured))
    for p in model.parameters():
        p.grad = None
    return {
        "model": name,
        "set_to_none": set_to_none,
        "stages": len(chain["stages"]),
        "inputs": chain.get("inputs"),
        "parameter_gradient_bytes": sum(s.get("parameter_gradient_bytes", 0) for s in chain["stages"]),
        "weights_bytes": weights,
        "fixed_bytes": fixed,
        "m_high": m_high,
        "m_low": low,
        "plain_peak": plain,
        "plans": plans,
        "describe_seconds": described,
    }


def pct(a, b):
    return f"{(a / b - 1) * 100:+.2f} %"


def table(rows):
    print("| model | zero_grad | stages | fixed (weights, buffers[, grads]) | M_high / plain step | total peak, predicted / measured | plans at α = 0.1, 0.5, 0.9: measured vs predicted |")
    print("|---|---|---:|---:|---|---|---|")
    for r in rows:
        mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
        total_p, total_m = r["fixed_bytes"] + r["m_high"], r["fixed_bytes"] + r["plain_peak"]
        plans = ", ".join(pct(m, p) for _, p, m in r["plans"]) or "—"
        print(f"| {r['model']} | set_to_none={r['set_to_none']} | {r['stages']} | {mib(r['fixed_bytes'])} | "
              f"{mib(r['m_high'])} / {mib(r['plain_peak'])} ({pct(r['m_high'], r['plain_peak'])}) | "
              f"{mib(total_p)} / {mib(total_m)} ({pct(total_p, total_m)}) | {plans} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="comma-separated names (default: all)")
    ap.add_argument("--json", help="write every row here")
    args = ap.parse_args()
    all_models = models()
    names = args.models.split(",") if args.models else list(all_models)
    rows = []
    for name in names:
        for set_to_none in (True, False):
            t0 = time.perf_counter()
            rows.append(row(name, all_models[name], set_to_none))
            print(f"# {name} set_to_none={set_to_none}: {time.perf_counter() - t0:.0f} s", flush=True)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)
    print(f"\ntorch {torch.__version__}, {torch.get_num_threads()} threads, CPU; "
          f"{time.strftime('%Y-%m-%d')}")
    table(rows)


if __name__ == "__main__":
    main()
