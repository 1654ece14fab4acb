#!/usr/bin/env python3
"""Where Remat's plans over compiled stages lose to whole-model
torch.compile (issue 41): one step of a model, run four ways in
interleaved rounds on this machine —

* plain eager;
* the whole model through `torch.compile` (inductor, the default budget:
  `scripts/peers.py`'s budget 1.0 peer);
* each block compiled alone (`block.compile()`, torchtitan's way), the rest
  eager, plain autograd;
* Remat's store-all plan over compiled stages (`describe_chain(...,
  compile=True)`, then `checkpointed(..., compile=True)`).

If the third is as fast as the second and the fourth slower, the cost is
Remat's runtime; if the third is as slow as the fourth, it is compiling
stage by stage. Medians and minima of the rounds; one process, the
machine's load printed.

    PYTHONPATH=.tools/libtorch:.tools/pydeps python3 scripts/compiled_stages.py \\
        --model llama --rounds 9
"""

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402

import peers  # noqa: E402  (the models, as the peers table builds them)
import remat_torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--remat", default="target/release/remat")
    ap.add_argument("--model", default="llama", choices=["gpt2", "llama", "vit", "resnet18"])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--merge", type=int, default=1, help="Remat's stages join this many blocks (describe_chain's)")
    ap.add_argument("--join-glue", action="store_true",
                    help="Remat's stages take the stem and head in (describe_chain's join_glue): with "
                         "--merge covering every block, the whole step is one stage")
    ap.add_argument("--budget", type=float, default=1.0,
                    help="the partitioner's budget for the whole model and Remat's stages (default 1.0)")
    args = ap.parse_args()
    model, batch, target, loss, blocks = peers.build(args.model)
    model.train()

    def clear(m):
        for p in m.parameters():
            p.grad = None

    def eager_step(m):
        def step():
            clear(m)
            peers.model_loss(m, loss, batch, target).backward()
        return step

    whole, _ = peers.compiled(model, args.budget)

    def whole_step():
        clear(model)
        out = whole(**batch) if isinstance(batch, dict) else whole(batch)
        loss(out, target).backward()

    whole_step()  # compiled now, at the budget just set

    per_block = copy.deepcopy(model)
    per_block_blocks = []
    names = {id(b): n for n, b in model.named_modules()}
    wanted = {names[id(b)] for b in blocks}
    for name, m in per_block.named_modules():
        if name in wanted:
            m.compile(backend="inductor")
            per_block_blocks.append(m)

    # The block stack compiled as one module, the rest eager, where the
    # blocks are the children of one nn.Sequential (the ViT's `blocks`):
    # what whole-model compilation gains over it is the embedding's and the
    # head's fusion with the first and last block.
    parents = {n.rsplit(".", 1)[0] for n in wanted if "." in n}
    stack = None
    if len(parents) == 1:
        stack = copy.deepcopy(model)
        parent = stack.get_submodule(parents.pop())
        if isinstance(parent, torch.nn.Sequential):
            parent.compile(backend="inductor")
        else:
            stack = None

    with tempfile.TemporaryDirectory() as work:
        how = dict(compile=args.budget, merge=args.merge, join_glue=args.join_glue)
        chain = remat_torch.describe_chain(model, batch, target, loss=loss, **how)
        path = os.path.join(work, "chain.json")
        with open(path, "w") as f:
            json.dump(chain, f)
        plan = os.path.join(work, "store-all.json")
        solved = subprocess.run([args.remat, "solve", path, "-a", "store-all", "-b", "100%", "--json", "-o", plan],
                                capture_output=True, text=True, check=True)
        predicted = json.loads(solved.stdout)["makespan_seconds"]
        wrapper = remat_torch.checkpointed(model, plan, loss=loss, chain=path, **how)
        wrapper.record_states = False

        def remat_step():
            clear(model)
            wrapper(batch, target)

        methods = {
            "plain eager": eager_step(model),
            f"whole model compiled (budget {args.budget:g})": whole_step,
            f"each block compiled ({len(per_block_blocks)})": eager_step(per_block),
            f"Remat store-all, {len(chain['stages'])} compiled stages (merge {args.merge}"
            + (", glue joined" if args.join_glue else "") + ")": remat_step,
        }
        if stack is not None:
            methods["block stack compiled as one, rest eager"] = eager_step(stack)
        for step in methods.values():  # compiles and warms up
            step()
            step()
        times = {k: [] for k in methods}
        load = os.getloadavg()[0]
        for _ in range(args.rounds):
            for k, step in methods.items():
                t0 = time.perf_counter()
                step()
                times[k].append(time.perf_counter() - t0)
    print(f"{args.model}: {args.rounds} interleaved rounds, load {load:.2f} → {os.getloadavg()[0]:.2f}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for k, v in times.items():
        print(f"  {k:52s} median {statistics.median(v) * 1e3:7.1f} ms   min {min(v) * 1e3:7.1f} ms")
    print(f"  (Remat's prediction for its store-all plan: {predicted * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
