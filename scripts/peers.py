"""Remat against the knobs a PyTorch user already has, side by side (issue 41).

For each model (transformers GPT-2 and Llama, timm ViT, torchvision
ResNet-18; random weights, built from configs), in one process and on one
machine, interleaved rounds of one training step of each *peer*:

* plain eager;
* transformers' switch, every layer (`gradient_checkpointing_enable`,
  non-reentrant) and every other layer (the others' flag off) — for other
  models the same thing done by hand: `checkpoint` around each block, or
  around every other one;
* selective activation checkpointing as torchtitan applies it: each block
  under `checkpoint(..., context_fn=create_selective_checkpoint_contexts)`
  with a policy that saves matmul and attention outputs (`sac-mm-attn`) or
  every other matmul (`sac-every-other-mm`);
* torch.compile (inductor) with the partitioner's budget
  `torch._functorch.config.activation_memory_budget = b`;

and, at **each peer's measured peak** as the budget, Remat's rotor plan
solved by the `remat` binary, run through `remat_torch.checkpointed`:

* over eager stages, on the chain `describe_chain(..., menu=True)` measured
  (selective-checkpointing menus) — once with the menus (the option DP) and
  once with them removed (rotor's two options);
* over `torch.compile`d stages (`describe_chain(..., compile=True,
  menu=True)`: each stage compiled alone, the partitioner's budgets
  0.8 … 0.0 as menu options; `checkpointed(..., compile=True)`), the fair
  comparison with torch.compile — again with and without the menus;
* over stages of k compiled blocks each, for each k of `--merge` above 1
  (`describe_chain(..., compile=True, menu=True, merge=k)`; `all`: every
  block in one compiled stage). Whole-model torch.compile fuses across
  block boundaries (a block's residual add and dropout with the next
  block's norm) where stage-by-stage compilation cannot; a stage of k
  blocks gets that fusion inside it, and with k = all the partitioner's
  own choice at the peer's budget is one of Remat's options for the
  blocks: the peer's configuration (but for the embedding and the head,
  compiled apart) is in the set the option DP searches. `k+glue` joins
  the stem and head to the blocks beside them (`join_glue=True`); with
  `all+glue` the whole step is one stage, and the peer's own
  configuration — the whole model compiled at its budget — is one of
  Remat's options, but with the loss inside the graph; `+loss` keeps the
  loss a stage of its own, run eagerly after the compiled stages
  (`loss_apart=True`), as `torch.compile(model)` runs it: with
  `all+glue+loss` the chain is the whole model compiled, then the loss,
  and the peer's configuration is exactly one of Remat's.

The last column is **Remat's pick**: of its chains with menus, the one whose
plan it predicts fastest at the peer's peak — what a user running Remat
would get, chosen before anything is timed (not the best measured).

Every peer's gradients are checked: eager peers against plain eager,
torch.compile's budgets against its budget 1.0, from the same RNG state
(its random ops draw differently from eager's), to the model's float32
tolerance: 4× how far plain eager's float32 gradients are from the same
step in float64 (each gradient's difference over its largest value), and
never below 1e-4 (`gradient_tolerance`). A peer off by more trains on
wrong gradients (torch.compile's partitioner at low budgets recomputes
dropout with a new draw, PyTorch's bug #190758): the table says so, and
Remat's compiled menus leave such options out. A fixed 1e-4 called right
gradients wrong: on the ResNet-18 (BatchNorm over 4×4 maps in its last
blocks) plain eager's float32 gradients are 0.017 from float64, torch.compile
at budget 1.0's 0.032, at budget 0.0's 0.018 (2026-12-02).

Every peak is read the same way: the allocator's events over the step
(`remat_torch.measure.Meter`), the parameter gradients the step creates
counted (`zero_grad(set_to_none=True)`), plus the batch (a^0) — the
convention `plain_step_peak` and the chain share by default. (Runs before
2026-11-29 booked the gradients outside.) A chain staged otherwise than
`plain_step_peak`'s program holds other step constants outside its memory
(the Llama's rotary tables are a constant where six stages read them and
the model stage's own where one does: 65,536 B): each plan is solved at
the peer's peak plus the difference of the two `constant_bytes`, and its
peaks are reported back in the peers' terms (runs before 2026-12-02 solved
the whole-model chains 65,536 B below the Llama peers' memory). Times:
the median of --rounds rounds, every method once per round. Each peer is
timed beside Remat's plans at its peak, as one group: the peer first in
even rounds and last in odd ones, the groups in an order that rotates by
one each round. A step's time depends on what ran just before it and on
the machine's drift over the ~30 s of a round (runs before 2026-12-01
timed every peer, then every plan, in one fixed order: the same Remat
plan read 314 to 375 ms at different places of one GPT-2 round), so a
peer and the plans compared with it run next to each other, and no method
always runs at the same place. The machine's load average is printed
with the table. Remat's time over a peer's is paired by round: the median of
each round's ratio, with the number of rounds in which Remat was faster —
"0.83× (7/7)". On this shared 2-core machine two runs of the same step
differ by up to 10 %, so a median ratio near 1 is a tie, and k of n rounds
faster is what the claim rests on (7 of 7 happens by chance once in 128
when the two are equally fast).

    PYTHONPATH=.tools/libtorch:.tools/pydeps python3 scripts/peers.py \\
        --remat target/release/remat --models gpt2 --rounds 7 --merge 1,3,all

Prints one Markdown table per model; --json writes every row.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import remat_torch  # noqa: E402
from remat_torch import calibration  # noqa: E402
from remat_torch.measure import Meter  # noqa: E402
from remat_torch.compiled import policy_name  # noqa: E402
from remat_torch.staging import model_loss  # noqa: E402

aten = torch.ops.aten

# The ops torchtitan's default policy saves: matmuls and attention.
MATMULS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}
ATTENTION = {
    op
    for name in ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                 "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_cudnn_attention")
    for op in [getattr(getattr(aten, name, None), "default", None)]
    if op is not None
}


def lm_loss(out, labels):
    logits = out.logits[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))


def build(name: str):
    """(model, batch, target, loss, blocks): sizes where a CPU step takes
    50–500 ms; `blocks` is the list of modules the knobs wrap."""
    torch.manual_seed(0)
    if name == "gpt2":
        import transformers

        cfg = transformers.GPT2Config(n_layer=6, n_embd=256, n_head=4, vocab_size=2000, n_positions=256,
                                      bos_token_id=0, eos_token_id=0)
        model = transformers.GPT2LMHeadModel(cfg)
        ids = torch.randint(0, cfg.vocab_size, (4, 256))
        return model, {"input_ids": ids, "use_cache": False}, ids, lm_loss, list(model.transformer.h)
    if name == "llama":
        import transformers

        cfg = transformers.LlamaConfig(num_hidden_layers=6, hidden_size=256, intermediate_size=688,
                                       num_attention_heads=8, num_key_value_heads=2, vocab_size=2000,
                                       bos_token_id=0, eos_token_id=0, pad_token_id=0)
        model = transformers.LlamaForCausalLM(cfg)
        ids = torch.randint(0, cfg.vocab_size, (4, 256))
        return model, {"input_ids": ids, "use_cache": False}, ids, lm_loss, list(model.model.layers)
    if name == "vit":
        import timm

        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=128, num_classes=10)
        x = torch.randn(8, 3, 128, 128)
        return model, x, torch.randint(0, 10, (8,)), F.cross_entropy, list(model.blocks)
    if name == "resnet18":
        import torchvision

        model = torchvision.models.resnet18(num_classes=10)
        x = torch.randn(8, 3, 128, 128)
        blocks = [b for layer in (model.layer1, model.layer2, model.layer3, model.layer4) for b in layer]
        return model, x, torch.randint(0, 10, (8,)), F.cross_entropy, blocks
    raise SystemExit(f"--models: unknown model {name!r}")


def sac_policy(kind: str):
    """torchtitan's selective-checkpointing policies, as a context_fn. The
    every-other-matmul counter restarts with each forward and each
    recomputation (one counter per context pair), so both agree."""

    def context_fn():
        counts = {"forward": 0, "recompute": 0}

        def policy(ctx, op, *args, **kwargs):
            if op in ATTENTION:
                return CheckpointPolicy.MUST_SAVE
            if op in MATMULS:
                if kind == "mm-attn":
                    return CheckpointPolicy.MUST_SAVE
                key = "recompute" if ctx.is_recompute else "forward"
                counts[key] += 1
                keep = counts[key] % 2 == 1
                return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE
            return CheckpointPolicy.PREFER_RECOMPUTE

        return create_selective_checkpoint_contexts(policy)

    return context_fn


class Wrapped:
    """Each of `blocks` runs under `checkpoint(..., **kwargs)` while
    active: what a user's one line does, applied and removed in place."""

    def __init__(self, blocks, **kwargs) -> None:
        self.blocks, self.kwargs = blocks, kwargs

    def __enter__(self):
        for b in self.blocks:
            inner = b.forward
            b.forward = functools.partial(self._run, inner)
        return self

    def _run(self, inner, *args, **kwargs):
        return checkpoint(inner, *args, use_reentrant=False, **self.kwargs, **kwargs)

    def __exit__(self, *exc):
        for b in self.blocks:
            del b.forward  # back to the class's forward


class Switch:
    """transformers' own switch, `gradient_checkpointing_enable(...)`, with
    the layers in `off` switched back off (their `gradient_checkpointing`
    flag), as a user turns it off for some layers."""

    def __init__(self, model, off=(), **kwargs) -> None:
        self.model, self.off, self.kwargs = model, off, kwargs

    def __enter__(self):
        self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False, **self.kwargs})
        for layer in self.off:
            layer.gradient_checkpointing = False
        return self

    def __exit__(self, *exc):
        self.model.gradient_checkpointing_disable()
        # The switch also registers a forward hook on the input embeddings
        # (`enable_input_require_grads`) that disabling it leaves in place;
        # remat_torch refuses a model with a hook its captured stages would
        # never run (`FrozenStateError`): take it off as it was put on.
        if hasattr(self.model, "disable_input_require_grads"):
            self.model.disable_input_require_grads()


def peers(model, blocks, compile_budgets):
    """(name, context manager factory, compile budget or None) per peer:
    transformers' switch where the model has it, the same by hand
    (`checkpoint` around each block) where it does not."""
    import contextlib

    every_other, others = blocks[::2], blocks[1::2]
    if hasattr(model, "gradient_checkpointing_enable"):
        def knob(*, off=(), **kwargs):
            return lambda: Switch(model, off, **kwargs)
        every, half = "transformers' switch, every layer", "transformers' switch, every other layer"
    else:
        def knob(*, off=(), **kwargs):
            return lambda: Wrapped([b for b in blocks if b not in off], **kwargs)
        every, half = "checkpoint every block", "checkpoint every other block"
    out = [("plain eager", contextlib.nullcontext, None),
           (every, knob(), None),
           (half, knob(off=others), None),
           ("SAC, save mm + attention", knob(context_fn=sac_policy("mm-attn")), None),
           ("SAC, every other mm", knob(context_fn=sac_policy("every-other")), None)]
    assert len(every_other) + len(others) == len(blocks)
    for b in compile_budgets:
        out.append((f"torch.compile, budget {b}", contextlib.nullcontext, b))
    return out


def compiled(model, budget):
    """`model` compiled with the partitioner's budget, through a function of
    its own; call (warm up) it before compiling the next, as the budget is
    read when the graph is compiled, at the first call. Dynamo caches a
    compiled graph on the code object it compiled, and since it inlines
    nn.Modules it does not guard on which module object it ran: so each
    budget gets a fresh code object (a two-line function compiled from
    source), and the budgets' graphs live side by side. Two ways that
    fail, both tried: `torch.compile(model)` (or a copy) for every budget
    (budget 1.0's graph was reused for all: every peak came out the same),
    and `torch._dynamo.reset()` between budgets (it drops the earlier
    peers' graphs, and the timed rounds recompiled them under the last
    budget set)."""
    import torch._dynamo
    import torch._functorch.config as functorch_config

    for limit in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 64)
    functorch_config.activation_memory_budget = budget
    scope = {"model": model}
    source = "def step_model(*args, **kwargs):\n    return model(*args, **kwargs)\n"
    exec(compile(source, f"<torch.compile at budget {budget}>", "exec"), scope)
    return torch.compile(scope["step_model"], backend="inductor"), params_of(model)


def params_of(model):
    return [p for p in model.parameters() if p.requires_grad]


def run_model(name, args, work):
    device = torch.device("cpu")
    model, batch, target, loss, blocks = build(name)
    model.train()
    plain = remat_torch.plain_step_peak(model, batch, target, loss)
    params = [p for p in model.parameters() if p.requires_grad]
    # The batch's bytes as the chain counts them (a^0): the plain step's
    # peak in the chain's convention minus the same step's meter peak.
    rng = torch.get_rng_state()

    def reset(ps=params):
        torch.set_rng_state(rng)
        for p in ps:
            p.grad = None

    def gradients(step, ps=params):
        reset(ps)
        step()
        return [None if p.grad is None else p.grad.detach().clone() for p in ps]

    def meter_peak(step, ps=params):
        reset(ps)
        # Every byte, the gradients the step creates included, as the
        # chain (set_to_none=True) and plain_step_peak count them.
        _, _, peak = Meter(device).measure(step)
        return peak

    plain_step = lambda: model_loss(model, loss, batch, target).backward()  # noqa: E731
    offset = plain["peak_bytes"] - meter_peak(plain_step)
    reset()
    want_loss = model_loss(model, loss, batch, target)
    want_loss.backward()
    want = [None if p.grad is None else p.grad.clone() for p in params]
    reset()
    tolerance, noise = gradient_tolerance(model, batch, target, loss, want_loss, want, rng)
    print(f"  {name}: gradients to {tolerance:.2g} of their largest value (float32 against float64: "
          + ("not comparable, the float64 step drew other random numbers" if noise is None else f"{noise:.2g}")
          + ")", flush=True)

    # Every chain Remat plans on, described as variants of one model and
    # timed on one clock (`remat_torch.variants`): the eager stages, and
    # for each --merge k and --classic-budgets b, stages of k compiled
    # blocks whose F_all runs the partitioner at budget b.
    variant_of = {"remat": {"menu": True}}
    if args.compiled:
        for k, glue, apart in merge_values(args.merge, len(blocks)):
            for b in args.classic_budgets:
                kind = "remat-compiled" if (k, glue, apart, b) == (1, False, False, 1.0) else (
                    f"remat-compiled-merge{k}" + ("-glue" if glue else "") + ("-loss" if apart else "")
                    + ("" if b == 1.0 else f"-at{b:g}"))
                menu = True if args.menu_budgets is None else [
                    policy_name(m) for m in args.menu_budgets if m != b]
                variant_of[kind] = {"compile": b, "merge": k, "join_glue": glue, "loss_apart": apart, "menu": menu}
                if k == len(blocks) and glue and args.paths != "eager":
                    # The whole model compiled: captured on the path its
                    # code takes under torch.compile, as the peers ran it.
                    variant_of[kind]["paths"] = args.paths
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        described_all = remat_torch.describe_variants(model, batch, target, list(variant_of.values()), loss=loss,
                                                      repeat=args.repeat)
    described = time.perf_counter() - t0
    left_out = sorted({str(w.message) for w in caught if "left out of the menus" in str(w.message)})
    for m in left_out:
        print(f"  {name}: {m[:300]}", flush=True)
    print(f"  {name}: {len(described_all)} chains described and timed together in {described:.0f} s", flush=True)
    chains = dict(zip(variant_of, described_all))
    for kind, c in chains.items():
        print(f"  {name}: {kind}: store-all {1000 * remat_torch.variants.store_all_seconds(c):.1f} ms; menus: "
              + ", ".join(f"{s['name']}: {len(s.get('menu', []))}" for s in c["stages"]), flush=True)
        with open(os.path.join(work, f"{name}-{kind}.json"), "w") as f:
            json.dump(c, f)
    chain = chains["remat"]
    with_menus = os.path.join(work, f"{name}-remat.json")
    without = os.path.join(work, f"{name}-classic.json")
    with open(without, "w") as f:
        json.dump(dict(chain, stages=[{k: v for k, v in s.items() if k != "menu"} for s in chain["stages"]]), f)
    compiled_path = os.path.join(work, f"{name}-remat-compiled.json")
    compiled_classic = os.path.join(work, f"{name}-compiled-classic.json")
    chain_c = chains.get("remat-compiled")
    if chain_c is not None:
        with open(compiled_classic, "w") as f:
            json.dump(dict(chain_c, stages=[{k: v for k, v in s.items() if k != "menu"}
                                            for s in chain_c["stages"]]), f)
    merges = {k: v for k, v in variant_of.items() if k != "remat"}

    methods = []  # (label, step function)
    for label, context, budget in peers(model, blocks, args.compile_budgets):
        step_model, ps = compiled(model, budget) if budget is not None else (model, params)

        def step(step_model=step_model, context=context):
            with context():
                model_loss(step_model, loss, batch, target).backward()

        try:
            reset(ps)
            step()  # warm-up (and the compile)
            peak = meter_peak(step, ps) + offset
        except Exception as e:  # a knob that does not run here: say so, go on
            print(f"  {name}: {label}: {type(e).__name__}: {e}", flush=True)
            continue
        methods.append({"label": label, "step": step, "peak": peak, "kind": "peer", "params": ps,
                        "budget": budget, "grads": gradients(step, ps)})

    # Which peers train on the gradients they should (module docstring).
    reference = {None: want, "compiled": next((m["grads"] for m in methods if m["budget"] == 1.0), None)}
    for m in methods:
        ref = reference["compiled" if m["budget"] is not None else None]
        m["off_by"] = None if ref is None else off_by(m["grads"], ref)

    def shift(kind):
        """What a peak in the plain step's terms (the peers') is in the
        chain's: its step constants differ where the staging does (a table
        two stages read is a constant, inside one stage it is the stage's;
        `constant_bytes`, docs/formats.md). The same memory, other bytes."""
        chain_of_kind = chains[kind.replace("-classic", "")]
        return plain["constant_bytes"] - chain_of_kind.get("constant_bytes", plain["constant_bytes"])

    def remat_plan(peer, path, kind):
        out = os.path.join(work, f"{name}-{kind}-{peer['peak']}.json")
        # Solved at the peer's memory in the chain's terms; every peak of
        # the plan reported back in the peers' terms.
        p = subprocess.run([args.remat, "solve", path, "-a", "rotor", "-b", str(peer["peak"] + shift(kind)),
                            "--json", "-o", out], capture_output=True, text=True)
        if p.returncode != 0:
            return {"error": p.stderr.strip().splitlines()[-1]}
        result = json.loads(p.stdout)
        if not result["feasible"]:
            return {"error": "infeasible: " + result["detail"]}
        compiled = kind.startswith("remat-compiled")
        variant = variant_of.get(kind.replace("-classic", ""), {})
        wrapper = remat_torch.checkpointed(model, out, loss=loss, chain=path, **remat_torch.run_arguments(variant))
        wrapper.record_states = False
        reset()
        wrapper(batch, target)  # finds the stages for this shape, warms up (compiles)
        reset()
        got, measured = wrapper.measure_step(batch, target)
        if compiled:  # to the tolerance against the compiled budget 1.0 (the graphs differ from eager's)
            grads = gradients(lambda: wrapper(batch, target), params)
            same = reference["compiled"] is not None and off_by(grads, reference["compiled"]) <= tolerance
        else:
            same = torch.equal(got, want_loss.detach().float()) and all(
                (a is None and b.grad is None) or (a is not None and b.grad is not None and torch.equal(a, b.grad))
                for a, b in zip(want, params))
        return {"step": lambda: wrapper(batch, target), "predicted_peak": result["peak_bytes"] - shift(kind),
                "predicted_seconds": result["makespan_seconds"], "peak": measured - shift(kind), "bitwise": same,
                "options": len(result.get("options", []))}

    kinds = [("remat", with_menus), ("remat-classic", without)]
    if chain_c is not None:
        kinds += [("remat-compiled", compiled_path), ("remat-compiled-classic", compiled_classic)]
    kinds += [(kind, os.path.join(work, f"{name}-{kind}.json")) for kind in merges if kind != "remat-compiled"]
    for peer in [m for m in methods if m["kind"] == "peer"]:
        for kind, path in kinds:
            plan = remat_plan(peer, path, kind)
            peer[kind] = plan
            if "step" in plan:
                methods.append({"label": f"{kind} at {peer['label']}", "step": plan["step"], "kind": kind,
                                "peer": peer["label"]})

    load = os.getloadavg()
    times = {m["label"]: [] for m in methods}
    for r in range(args.rounds):
        for m in round_order(methods, r):
            reset(m.get("params", params))
            t = time.perf_counter()
            m["step"]()
            times[m["label"]].append(time.perf_counter() - t)
    median = {k: statistics.median(v) for k, v in times.items()}
    rows = []
    for peer in [m for m in methods if m["kind"] == "peer"]:
        row = {"peer": peer["label"], "peak_bytes": peer["peak"], "seconds": median[peer["label"]],
               "round_seconds": times[peer["label"]]}
        # The same peak after the rounds: what was timed is what was
        # measured (a compiled peer recompiled under another budget would
        # show another peak).
        again = meter_peak(peer["step"], peer["params"]) + offset
        if again != peer["peak"]:
            row["peak_after_rounds"] = again
            print(f"  {name}: {peer['label']}: peak {peer['peak']} B before the rounds, {again} B after",
                  flush=True)
        row["gradients_off_by"] = peer["off_by"]
        for kind, _ in kinds:
            plan = peer[kind]
            if "error" in plan:
                row[kind] = {"error": plan["error"]}
                continue
            row[kind] = {k: plan[k] for k in ("predicted_peak", "predicted_seconds", "peak", "bitwise", "options")}
            label = f"{kind} at {peer['label']}"
            row[kind]["seconds"] = median[label]
            row[kind]["round_seconds"] = times[label]
            # Paired by round (module docstring): each round's Remat time
            # over the same round's peer time, so a drift of the machine
            # between rounds cancels out.
            paired = [a / b for a, b in zip(times[label], times[peer["label"]])]
            row[kind]["ratio"] = statistics.median(paired)
            row[kind]["faster_rounds"] = sum(x < 1.0 for x in paired)
        # The plan Remat would hand this user: of its chains with menus
        # (eager, compiled stage by stage, compiled k blocks to a stage),
        # the one whose plan it *predicts* fastest at this peak — chosen
        # before anything is timed, not the best measured.
        candidates = [k for k, _ in kinds if not k.endswith("classic") and "ratio" in row[k]]
        if candidates:
            row["pick"] = min(candidates, key=lambda k: row[k]["predicted_seconds"])
        own = own_configuration(chains, variant_of, peer["budget"], args.remat, work, shift)
        if own is not None:
            row["own_configuration"] = own
        rows.append(row)
    if args.chains and chain_c is not None:
        # The compiled chain with its menus and the peers as measured: the
        # page draws them beside the planners' curves (docs/formats.md).
        chain_c["peers"] = [
            {"name": r["peer"], "peak_bytes": r["peak_bytes"] + shift("remat-compiled"), "seconds": r["seconds"],
             **({} if r["gradients_off_by"] is None or r["gradients_off_by"] <= tolerance
                else {"gradients_right": False})}
            for r in rows
        ]
        factor = on_the_rounds_clock(chain_c, rows)
        chain_c["source"] += (f"; peers: scripts/peers.py, medians of {args.rounds} interleaved rounds, "
                              f"peaks in the chain's convention")
        if factor is not None:
            chain_c["source"] += (f"; the chain's times scaled by {factor:.4f} onto the rounds' clock (its "
                                  f"plans at the peers' peaks, measured over predicted, median)")
        os.makedirs(args.chains, exist_ok=True)
        with open(os.path.join(args.chains, f"{name}-compiled-peers.json"), "w") as f:
            json.dump(chain_c, f, indent=1)
    return {"model": name, "stages": len(chain["stages"]), "rounds": args.rounds, "load": load,
            "after_load": os.getloadavg(), "threads": torch.get_num_threads(), "describe_seconds": described,
            "plain_peak_bytes": plain["peak_bytes"], "rows": rows, "torch": torch.__version__,
            "compiled_left_out": left_out, "merges": merges, "gradient_tolerance": tolerance,
            "float32_noise": noise}


def gradient_tolerance(model, batch, target, loss, loss32, grads32, rng):
    """(tolerance, noise): how far right gradients may be from a
    reference — 4× `noise`, plain eager's float32 gradients against the
    same step in float64 (`off_by`), at least 1e-4 — and that noise, or
    None where the float64 step is no reference: its loss more than 1e-5
    from float32's (a random op drew other numbers in float64)."""
    import copy

    def to64(x):
        if isinstance(x, torch.Tensor):
            return x.double() if x.is_floating_point() else x
        if isinstance(x, dict):
            return {k: to64(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(to64(v) for v in x)
        return x

    model64 = copy.deepcopy(model).double()
    for p in model64.parameters():
        p.grad = None
    state = torch.get_rng_state()
    torch.set_rng_state(rng)
    try:
        loss64 = model_loss(model64, loss, to64(batch), target)
        loss64.backward()
    finally:
        torch.set_rng_state(state)
    l64, l32 = float(loss64.detach()), float(loss32.detach())
    if abs(l64 - l32) > 1e-5 * max(1.0, abs(l32)):
        return 1e-4, None
    grads64 = [None if p.grad is None else p.grad.float() for p in model64.parameters() if p.requires_grad]
    noise = off_by(grads32, grads64)
    return max(1e-4, 4 * noise), noise


def on_the_rounds_clock(chain, rows, kind="remat-compiled"):
    """Scales `chain`'s times in place onto the clock of the rounds its
    peers were timed in: by the median, over the peers' points, of its
    plan's measured step over the step it predicted. The page draws the
    peers' measured times against the chain's predicted curves; a host
    that ran slower in the rounds than while the chain was described
    (10–20 % on 2026-12-02's host) drew every peer that much slower than it
    was beside Remat's plans. Returns the factor; None (nothing scaled)
    where no plan of the chain ran."""
    ratios = [r[kind]["seconds"] / r[kind]["predicted_seconds"] for r in rows
              if "seconds" in r.get(kind, {}) and r[kind].get("predicted_seconds", 0) > 0]
    if not ratios:
        return None
    factor = statistics.median(ratios)
    calibration.apply(chain["stages"], factor, 0.0)
    return factor


def round_order(methods, r):
    """Round r's order (module docstring): each peer with Remat's plans at
    its peak as one group, the peer first in even rounds and last in odd
    ones, the groups rotated by r."""
    groups = [[p] + [m for m in methods if m.get("peer") == p["label"]]
              for p in methods if p["kind"] == "peer"]
    if not groups:
        return list(methods)
    k = r % len(groups)
    groups = groups[k:] + groups[:k]
    return [m for g in groups for m in (g if r % 2 == 0 else g[::-1])]


def own_configuration(chains, variant_of, budget, remat, work, shift):
    """A torch.compile peer's own configuration — the whole model compiled
    at its budget — as one of Remat's options: on a chain of the whole
    model then its eager loss (`all+glue+loss`: exactly the peer's) or,
    failing that, of the whole step as one stage (`all+glue`: the loss
    inside the graph), the model stage's classic F_all when the chain was
    compiled at that budget, else its menu entry
    `activation_memory_budget=b`. Returns its store-all step as the
    simulator predicts it (time, peak: the option made the stage's classic
    F_all, menus dropped, `remat solve -a store-all`) and which chain, or
    None when no chain holds it. Its peak in the peers' terms (`shift`:
    the chain's step constants against the plain step's). With it, the
    DP's exactness is a proof:
    wherever this option fits, the plan Remat picks is predicted no slower
    than the peer's own configuration."""
    if budget is None:
        return None
    whole = [kind for kind, v in variant_of.items() if v.get("join_glue") and chains.get(kind) is not None
             and len(chains[kind]["stages"]) == (2 if v.get("loss_apart") else 1)]
    for kind in sorted(whole, key=lambda k: not variant_of[k].get("loss_apart")):
        v, chain = variant_of[kind], chains[kind]
        stage = dict(chain["stages"][0])
        menu = stage.pop("menu", None) or []
        if v["compile"] != budget:
            entry = next((e for e in menu if e["policy"] == policy_name(budget)), None)
            if entry is None:
                continue
            stage = entry_as_f_all(stage, entry)
        rest = [{k: x for k, x in s.items() if k != "menu"} for s in chain["stages"][1:]]
        result = store_all(dict(chain, stages=[stage] + rest), remat,
                           os.path.join(work, f"own-{kind}-{budget:g}.json"))
        if result is None:
            continue
        return {"kind": kind, "loss_apart": bool(v.get("loss_apart")),
                "predicted_seconds": result["makespan_seconds"], "predicted_peak": result["peak_bytes"] - shift(kind)}
    return None


def entry_as_f_all(stage, entry):
    """`stage` (menus dropped) with its menu `entry` as its classic F_all:
    the entry's saved bytes and transients, its extra time on B^ℓ."""
    out = dict(stage, saved_bytes=entry["saved_bytes"],
               backward_seconds=stage["backward_seconds"] + entry["backward_extra_seconds"],
               backward_overhead_bytes=entry.get("backward_overhead_bytes", 0))
    if "forward_overhead_bytes" in entry:
        out["forward_overhead_bytes"] = entry["forward_overhead_bytes"]
    out.pop("menu", None)
    return out


def store_all(chain, remat, path):
    """The simulator's store-all step of `chain` (written to `path`, solved
    by the `remat` binary): its `remat solve --json` answer (time, peak),
    or None when it refuses."""
    with open(path, "w") as f:
        json.dump(chain, f)
    p = subprocess.run([remat, "solve", path, "-a", "store-all", "-b", "100%", "--json"],
                       capture_output=True, text=True)
    return json.loads(p.stdout) if p.returncode == 0 else None


def merge_values(spec: str, blocks: int):
    """--merge: how many blocks each compiled stage joins, a comma list of
    whole numbers or `all` (every block in one stage), each optionally
    followed by `+glue` (the stem and the head joined to the blocks beside
    them: `all+glue` is the whole step as one stage) and `+loss` (the loss
    a stage of its own, eager: `all+glue+loss` is the whole model, then
    the loss). Triples (k, glue, loss apart)."""
    out = []
    for part in spec.split(","):
        count, *flags = part.strip().split("+")
        try:
            k = blocks if count == "all" else int(count)
        except ValueError:
            k = 0
        if k < 1 or any(f not in ("glue", "loss") for f in flags) or len(set(flags)) != len(flags):
            raise SystemExit(f"--merge: expected whole numbers ≥ 1 or 'all', each optionally with '+glue' "
                             f"and '+loss', got {part.strip()!r}")
        triple = (min(k, blocks), "glue" in flags, "loss" in flags)
        if triple not in out:
            out.append(triple)
    return out


def off_by(got, want) -> float:
    """The largest difference between two lists of gradients, each over
    its largest magnitude."""
    worst = 0.0
    for a, b in zip(got, want):
        if a is None or b is None:
            worst = max(worst, 0.0 if a is None and b is None else float("inf"))
            continue
        scale = float(b.abs().max()) or 1.0
        worst = max(worst, float((a - b).abs().max()) / scale)
    return worst


def variant_name(v) -> str:
    """A chain over compiled stages in words: how many blocks a stage
    joins, and the partitioner's budget of its F_all where not 1.0."""
    blocks = "each block" if v["merge"] == 1 else f"{v['merge']} blocks"
    glue = " with the stem and head joined" if v.get("join_glue") else ""
    loss = ", the loss eager apart" if v.get("loss_apart") else ""
    at = "" if v["compile"] == 1.0 else f", F_all at budget {v['compile']:g}"
    paths = ", captured on torch.compile's path" if v.get("paths") == "compiled" else ""
    return f"Remat over compiled stages of {blocks}{glue}{loss}{at}{paths}"


def report(s):
    """One Markdown table: per peer, its peak, step and whether its
    gradients are right; Remat's eager plan (with menus; rotor without
    them), its plan over compiled stages, and over stages of k compiled
    blocks for each --merge k > 1, at that peak: time predicted /
    measured, peak predicted / measured, options run, time over the
    peer's (the median of paired rounds, and in how many rounds Remat was
    faster). Then Remat's pick — the chain whose plan it predicts fastest
    — over the peer: the number a user would see."""
    mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
    merged = [k for k in s.get("merges", {}) if k != "remat-compiled"]
    names = {"remat": "Remat eager (menus)", "remat-compiled": "Remat over compiled stages",
             **{k: variant_name(s["merges"][k]) for k in merged}}
    header = ["peer", "peer's peak", "peer's step", "peer's gradients",
              f"{names['remat']}: time pred. / meas.; peak pred. / meas.; options", "/ peer",
              "rotor eager without menus / peer",
              f"{names['remat-compiled']}: time pred. / meas.; peak pred. / meas.; options", "/ peer",
              "rotor compiled without menus / peer"]
    for k in merged:
        header += [f"{names[k]}: time pred. / meas.; peak pred. / meas.; options", "/ peer"]
    header += ["Remat's pick (fastest predicted) / peer"]
    own = any("own_configuration" in r for r in s["rows"])
    if own:
        header += ["the peer's own configuration in Remat's model (the whole model as one stage): time; peak "
                   "predicted — the pick's predicted time over it"]
    lines = [f"### {s['model']} ({s['stages']} stages; {s['threads']} threads, load {s['load'][0]:.2f} → "
             f"{s['after_load'][0]:.2f}; medians of {s['rounds']} interleaved rounds; torch {s['torch']})", "",
             "| " + " | ".join(header) + " |",
             "|---|---:|---:|---|" + "|".join("---:" if h.startswith("/") or h.endswith("/ peer") else "---"
                                               for h in header[4:]) + "|"]

    def cell(plan, full):
        if plan is None:
            return ["not run", "—"] if full else ["—"]
        if "error" in plan:
            return [plan["error"][:60], "—"] if full else ["—"]
        ratio = f"{plan['ratio']:.2f}× ({plan['faster_rounds']}/{s['rounds']})"
        if not full:
            return [ratio]
        flag = "" if plan["bitwise"] else " (gradients differ!)"
        return [f"{1000 * plan['predicted_seconds']:.0f} / {1000 * plan['seconds']:.0f} ms; "
                f"{mib(plan['predicted_peak'])} / {mib(plan['peak'])}; {plan['options']}{flag}", ratio]

    for r in s["rows"]:
        off = r.get("gradients_off_by")
        tol = s.get("gradient_tolerance", 1e-4)
        grads = "—" if off is None else "right" if off <= tol else f"**wrong** (off by {off:.2g})"
        row = [r["peer"], mib(r["peak_bytes"]) + (" (changed after the rounds!)" if "peak_after_rounds" in r else ""),
               f"{1000 * r['seconds']:.1f} ms", grads]
        row += cell(r.get("remat"), True) + cell(r.get("remat-classic"), False)
        row += cell(r.get("remat-compiled"), True) + cell(r.get("remat-compiled-classic"), False)
        for k in merged:
            row += cell(r.get(k), True)
        pick = r.get("pick")
        row += [f"**{r[pick]['ratio']:.2f}×** ({r[pick]['faster_rounds']}/{s['rounds']}; {names[pick]})"
                if pick else "—"]
        if own:
            o = r.get("own_configuration")
            if o is None:
                row += ["—"]
            else:
                fits = o["predicted_peak"] <= r["peak_bytes"]
                head = (f"{1000 * o['predicted_seconds']:.0f} ms; {mib(o['predicted_peak'])}"
                        + (" (loss eager)" if o["loss_apart"] else " (loss in the graph)"))
                if pick and fits:
                    row += [f"{head} — {r[pick]['predicted_seconds'] / o['predicted_seconds']:.2f}×"]
                else:
                    over = o["predicted_peak"] - r["peak_bytes"]
                    row += [f"{head} — " + (f"{over} B above the peer's peak" if not fits else "no pick")]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", f"Gradients right to {s.get('gradient_tolerance', 1e-4):.2g} of their largest value "
              + ("(4× plain eager's float32 against float64, "
                 f"{s['float32_noise']:.2g}; at least 1e-4)." if s.get("float32_noise") is not None
                 else "(1e-4; the float64 step was no reference).")]
    if s.get("compiled_left_out"):
        lines += ["", "Left out of the compiled menus (wrong gradients): " + " ".join(s["compiled_left_out"])[:600]]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--remat", default="target/release/remat")
    ap.add_argument("--models", default="gpt2,llama,vit,resnet18")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3, help="describe_chain's repeat (its medians)")
    ap.add_argument("--compile-budgets", default="1.0,0.8,0.6,0.4,0.2,0.1,0.0",
                    help="torch.compile activation_memory_budget values ('' for none)")
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--chains", help="write each model's compiled chain, menus and peers, to this folder")
    ap.add_argument("--merge", default="1",
                    help="Remat over compiled stages of k blocks each, for each k of this comma list "
                         "('all': every block in one stage; 'k+glue': the stem and head joined to the "
                         "blocks beside them, 'all+glue' the whole step as one stage; '+loss': the loss a "
                         "stage of its own, eager, 'all+glue+loss' the whole model compiled then the loss)")
    ap.add_argument("--paths", default="eager", choices=("eager", "compiled"),
                    help="the path the whole-model chains (all+glue) capture where the model's code asks whether "
                         "it is traced: eager's, or torch.compile's (GPT-2's explicit causal mask: the peer's own "
                         "graph; on the 6-layer Llama it keeps 319,488 B more than the peer, the eager path less)")
    ap.add_argument("--classic-budgets", default="1.0",
                    help="the partitioner's budget of the compiled stages' F_all without an option, a comma "
                         "list: one chain per merge and budget")
    ap.add_argument("--menu-budgets", default=None,
                    help="the partitioner's budgets offered as menu options over compiled stages, a comma list "
                         "(default: remat_torch.compiled.MENU_BUDGETS)")
    ap.add_argument("--no-compiled", dest="compiled", action="store_false",
                    help="leave out Remat over torch.compile'd stages")
    args = ap.parse_args()
    args.compile_budgets = [float(b) for b in args.compile_budgets.split(",") if b.strip()]
    args.classic_budgets = [float(b) for b in args.classic_budgets.split(",") if b.strip()]
    if args.menu_budgets is not None:
        args.menu_budgets = [float(b) for b in args.menu_budgets.split(",") if b.strip()]
    out = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            s = run_model(name, args, work)
            print(report(s) + "\n", flush=True)
            out.append(s)
            if args.json:  # after each model: a long run stopped keeps what it measured
                with open(args.json, "w") as f:
                    json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    main()
