"""Predicted against measured, on models nobody here wrote.

For each model (transformers GPT-2 and Llama, torchvision ResNet-18, timm
ViT), built from a config with random weights on --device: describe it with
`remat_torch.describe_chain` (no staging code), measure a plain step's
activation peak (`plain_step_peak`), solve store-all and every algorithm
(--algorithms) at α = 0.1, 0.5, 0.9 between M_low and M_high with the
`remat` binary, run each schedule with `checkpointed(model, plan, loss=fn)`
and measure its peak (`Checkpointed.measure_step`), and compare the loss
and gradients with a plain step's. Times: the plan's predicted makespan
against the median of --steps measured steps; the wrapper's own cost:
store-all through it against plain autograd, medians of --steps
interleaved steps. The LMs are trained as transformers trains them: the
labels are the input ids. For transformers models, the framework's own
switch (`gradient_checkpointing_enable`, non-reentrant) is measured too.

    PYTHONPATH=python:.tools/libtorch:.tools/pydeps python3 scripts/remat-torch-measured.py \\
        --remat target/release/remat --device cpu --size small

Prints a Markdown table per model and writes the rows as JSON (--json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import remat_torch  # noqa: E402
from remat_torch.staging import model_loss  # noqa: E402


def lm_loss(out, labels):
    logits = out.logits[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))


def build(name: str, size: str, device: str):
    big = size == "large"
    torch.manual_seed(0)
    if name == "gpt2":
        import transformers

        cfg = transformers.GPT2Config(n_layer=12 if big else 4, n_embd=768 if big else 128,
                                      n_head=12 if big else 4, vocab_size=50257 if big else 2000,
                                      n_positions=1024, bos_token_id=0, eos_token_id=0)
        model = transformers.GPT2LMHeadModel(cfg)
        ids = torch.randint(0, cfg.vocab_size, (4, 1024 if big else 64))
        return model, {"input_ids": ids, "use_cache": False}, ids, lm_loss
    if name == "llama":
        import transformers

        cfg = transformers.LlamaConfig(num_hidden_layers=8 if big else 2, hidden_size=1024 if big else 64,
                                       intermediate_size=2816 if big else 128, num_attention_heads=16 if big else 4,
                                       num_key_value_heads=4 if big else 2, vocab_size=32000 if big else 1000,
                                       bos_token_id=0, eos_token_id=0, pad_token_id=0)
        model = transformers.LlamaForCausalLM(cfg)
        ids = torch.randint(0, cfg.vocab_size, (4, 1024 if big else 32))
        return model, {"input_ids": ids, "use_cache": False}, ids, lm_loss
    if name == "resnet18":
        import torchvision

        model = torchvision.models.resnet18(num_classes=1000 if big else 10)
        x = torch.randn(32 if big else 4, 3, 224 if big else 64, 224 if big else 64)
        return model, x, torch.randint(0, 1000 if big else 10, (x.shape[0],)), F.cross_entropy
    if name == "vit":
        import timm

        model = timm.create_model("vit_base_patch16_224" if big else "vit_tiny_patch16_224", pretrained=False,
                                  img_size=224 if big else 64, num_classes=1000 if big else 10)
        x = torch.randn(32 if big else 4, 3, 224 if big else 64, 224 if big else 64)
        return model, x, torch.randint(0, 1000 if big else 10, (x.shape[0],)), F.cross_entropy
    raise SystemExit(f"--models: unknown model {name!r}")


def to(obj, device):
    if isinstance(obj, dict):
        return {k: to(v, device) for k, v in obj.items()}
    return obj.to(device) if isinstance(obj, torch.Tensor) else obj


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_model(name, args, remat, work):
    device = torch.device(args.device)
    model, batch, target, loss = build(name, args.size, args.device)
    model = model.to(device).train()
    batch, target = to(batch, device), to(target, device)
    t0 = time.perf_counter()
    bandwidth = args.bandwidth or remat_torch.host_bandwidth(device)
    chain = remat_torch.describe_chain(model, batch, target, loss=loss, repeat=args.steps,
                                       bandwidth_bytes_per_s=bandwidth)
    described = time.perf_counter() - t0
    path = os.path.join(work, f"{name}.json")
    with open(path, "w") as f:
        json.dump(chain, f)
    plain = remat_torch.plain_step_peak(model, batch, target, loss)

    def solve(algorithm, budget):
        out = os.path.join(work, f"{name}-{algorithm}-{budget}.json")
        p = subprocess.run([remat, "solve", path, "-a", algorithm, "-b", str(budget), "--json", "-o", out],
                           capture_output=True, text=True)
        if p.returncode != 0:
            return None, p.stderr.strip()
        return json.loads(p.stdout), out

    store_all, store_all_path = solve("store-all", "100%")
    m_high, m_low = store_all["m_high_bytes"], store_all["m_low_bytes"]
    rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    params = list(model.parameters())

    def reset():
        torch.set_rng_state(rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state(cuda_rng, device)
        with torch.no_grad():
            for b, old in buffers:
                b.copy_(old)
        for p in params:
            p.grad = None

    reset()
    expected = model_loss(model, loss, batch, target)
    expected.backward()
    want = [None if p.grad is None else p.grad.clone() for p in params]

    def timed(fn):
        times = []
        for _ in range(args.steps):
            reset()
            sync(device)
            t = time.perf_counter()
            fn()
            sync(device)
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    plain_seconds = timed(lambda: model_loss(model, loss, batch, target).backward())
    # The wrapper's own cost: store-all through it against plain autograd,
    # steps interleaved so that the machine's drift hits both alike.
    wrapper = remat_torch.checkpointed(model, store_all_path, loss=loss)
    wrapper.record_states = False
    reset()
    wrapper(batch, target)
    pairs = []
    for _ in range(max(10, args.steps)):
        for fn, acc in ((lambda: model_loss(model, loss, batch, target).backward(), "plain"),
                        (lambda: wrapper(batch, target), "wrapper")):
            reset()
            sync(device)
            t = time.perf_counter()
            fn()
            sync(device)
            pairs.append((acc, time.perf_counter() - t))
    overhead = {k: statistics.median(t for a, t in pairs if a == k) for k in ("plain", "wrapper")}
    framework = None
    if hasattr(model, "gradient_checkpointing_enable"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        try:
            reset()
            hf = remat_torch.plain_step_peak(model, batch, target, loss)
            framework = {"peak_bytes": hf["peak_bytes"],
                         "seconds": timed(lambda: model_loss(model, loss, batch, target).backward())}
        finally:
            model.gradient_checkpointing_disable()
            # The switch also hooks the embedding (`enable_input_require_grads`)
            # and leaves the hook behind, which the wrapper refuses to freeze
            # (`FrozenStateError`): taken off as a user switching back would.
            if hasattr(model, "disable_input_require_grads"):
                model.disable_input_require_grads()
    rows = []
    plans = [("store-all", 1.0, store_all, store_all_path)]
    for algorithm in args.algorithms.split(","):
        for alpha in (0.1, 0.5, 0.9):
            budget = m_low + round(alpha * (m_high - m_low))
            result, plan = solve(algorithm, budget)
            if result is None:
                rows.append({"model": name, "algorithm": algorithm, "alpha": alpha, "error": plan})
                continue
            if not result["feasible"]:
                continue
            plans.append((algorithm, alpha, result, plan))
    for algorithm, alpha, result, plan in plans:
        try:
            step = remat_torch.checkpointed(model, plan, loss=loss)
            step.record_states = False
            reset()
            step(batch, target)  # finds the stages for this shape, warms up
            reset()
            got, measured = step.measure_step(batch, target)
            same = torch.equal(got, expected.detach().float()) and all(
                (a is None and b.grad is None) or (a is not None and b.grad is not None and torch.equal(a, b.grad))
                for a, b in zip(want, params))
            # On a GPU some backward kernels accumulate with atomics (an
            # embedding's, a convolution's weight gradient): two plain steps
            # differ too. The largest relative gradient difference says how
            # far from plain the plan's step is.
            rel = max(((a - b.grad).abs().max() / a.abs().max().clamp_min(1e-30)).item()
                      for a, b in zip(want, params) if a is not None and b.grad is not None)
            seconds = timed(lambda: step(batch, target))
            if args.runs and algorithm == "rotor" and alpha == 0.5:
                os.makedirs(args.runs, exist_ok=True)
                reset()
                base = os.path.join(args.runs, f"{name}-{args.size}-{device.type}")
                step.record_run(batch, target, base + "-rotor-run.json")
                with open(base + "-rotor.json", "w") as f, open(plan) as g:
                    f.write(g.read())
        except Exception as e:  # report the plan and go on
            rows.append({"model": name, "algorithm": algorithm, "alpha": alpha,
                         "error": f"{type(e).__name__}: {e}"})
            continue
        rows.append({
            "model": name, "algorithm": algorithm, "alpha": alpha,
            "predicted_peak_bytes": result["peak_bytes"], "measured_peak_bytes": measured,
            "predicted_seconds": result["makespan_seconds"], "measured_seconds": seconds,
            "offloaded_bytes": result.get("offloaded_bytes", 0),
            "recomputations": result.get("recomputations", 0),
            "bitwise": bool(same), "max_relative_gradient_difference": rel,
        })
    summary = {
        "model": name, "stages": len(chain["stages"]), "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "m_high_bytes": m_high, "plain_step_peak_bytes": plain["peak_bytes"], "m_low_bytes": m_low,
        "describe_seconds": described, "plain_step_seconds": plain_seconds,
        "sequential_seconds": store_all["sequential_seconds"], "rows": rows,
        "plain_median_seconds": overhead["plain"], "wrapper_store_all_median_seconds": overhead["wrapper"],
        "framework_checkpointing": framework, "threads": torch.get_num_threads(),
        "bandwidth_bytes_per_s": bandwidth,
        "stage_names": [s["name"] for s in chain["stages"]],
    }
    return summary, chain


def report(s):
    lines = [f"### {s['model']} ({s['stages']} stages, {s['device']}{', ' + s['gpu'] if s['gpu'] else ''})", ""]
    lines.append(f"M_high {s['m_high_bytes']:,} B vs plain step {s['plain_step_peak_bytes']:,} B "
                 f"({100 * (s['m_high_bytes'] / s['plain_step_peak_bytes'] - 1):+.2f} %); "
                 f"M_low {s['m_low_bytes']:,} B ({100 * s['m_low_bytes'] / s['m_high_bytes']:.0f} %); "
                 f"plain step {1000 * s['plain_step_seconds']:.2f} ms, chain's Σ {1000 * s['sequential_seconds']:.2f} ms; "
                 f"described in {s['describe_seconds']:.1f} s")
    lines.append(f"wrapper's own cost: store-all {1000 * s['wrapper_store_all_median_seconds']:.2f} ms vs plain "
                 f"{1000 * s['plain_median_seconds']:.2f} ms "
                 f"({100 * (s['wrapper_store_all_median_seconds'] / s['plain_median_seconds'] - 1):+.1f} %, "
                 f"{s['threads']} threads)")
    fw = s.get("framework_checkpointing")
    if fw:
        lines.append(f"transformers gradient_checkpointing_enable(): peak {fw['peak_bytes']:,} B "
                     f"({100 * fw['peak_bytes'] / s['m_high_bytes']:.0f} % of M_high), "
                     f"{1000 * fw['seconds']:.2f} ms ({100 * (fw['seconds'] / s['plain_step_seconds'] - 1):+.1f} %)")
    lines.append(f"host link measured: {s['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s")
    lines += ["", "| schedule | α | predicted peak | measured peak | Δ | predicted time | measured time | Δ | bitwise (max rel. grad diff) |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in s["rows"]:
        if "error" in r:
            lines.append(f"| {r['algorithm']} | {r['alpha']:.1f} | {r['error'][:120]} | | | | | | |")
            continue
        dp = 100 * (r["measured_peak_bytes"] / r["predicted_peak_bytes"] - 1)
        dt = 100 * (r["measured_seconds"] / r["predicted_seconds"] - 1)
        lines.append(f"| {r['algorithm']} | {r['alpha']:.1f} | {r['predicted_peak_bytes']:,} | "
                     f"{r['measured_peak_bytes']:,} | {dp:+.2f} % | {1000 * r['predicted_seconds']:.2f} ms | "
                     f"{1000 * r['measured_seconds']:.2f} ms | {dt:+.1f} % | {r['bitwise']} ({r['max_relative_gradient_difference']:.0e}) |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--remat", default="target/release/remat")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", choices=["small", "large"], default="small")
    ap.add_argument("--models", default="gpt2,resnet18,vit")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--algorithms", default="rotor,revolve,sequential,hong,pofo,offload-only,opportunist,"
                    "autocapper,dtr,delta,delta-lru,delta-greedy")
    ap.add_argument("--bandwidth", type=float, default=None,
                    help="host link in bytes/s for the chain (default: measured, remat_torch.host_bandwidth)")
    ap.add_argument("--runs", help="write rotor α = 0.5's plan and its recorded remat-run/1 here")
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--chains", help="write the described chains into this folder")
    args = ap.parse_args()
    out = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            try:
                summary, chain = run_model(name, args, args.remat, work)
            except Exception as e:  # report and go on with the next model
                print(f"### {name}: {type(e).__name__}: {e}", flush=True)
                out.append({"model": name, "error": f"{type(e).__name__}: {e}"})
                continue
            print(report(summary) + "\n", flush=True)
            out.append(summary)
            if args.chains:
                os.makedirs(args.chains, exist_ok=True)
                with open(os.path.join(args.chains, f"{name}-{args.size}-{args.device.split(':')[0]}.json"), "w") as f:
                    json.dump(chain, f, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
