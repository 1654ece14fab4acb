"""A rank of the pipeline tests (test_pipeline.py): a transformers GPT-2
cut into stage modules torchtitan's way, trained by
`torch.distributed.pipelining` with gloo, once without plans and once with
this rank's Remat plan, from the same weights and RNG."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from torch import nn

VOCAB = 128


def gpt2(layers: int, width: int):
    import transformers

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=layers, n_embd=width, n_head=4, vocab_size=VOCAB, n_positions=64,
                                  bos_token_id=0, eos_token_id=0, attn_pdrop=0.1, resid_pdrop=0.1,
                                  embd_pdrop=0.1)
    return transformers.GPT2LMHeadModel(cfg)


class Embed(nn.Module):
    def __init__(self, t) -> None:
        super().__init__()
        self.wte, self.wpe, self.drop = t.wte, t.wpe, t.drop

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        return self.drop(self.wte(ids) + self.wpe(pos))


class Head(nn.Module):
    def __init__(self, gpt) -> None:
        super().__init__()
        self.ln_f, self.lm_head = gpt.transformer.ln_f, gpt.lm_head

    def forward(self, x):
        return self.lm_head(self.ln_f(x))


class Part(nn.Module):
    """Blocks lo..hi−1 of a GPT-2, with the embeddings on the first part and
    the final norm and head on the last (the model's own modules, shared),
    every piece of code in a submodule as torchtitan's models have it."""

    def __init__(self, gpt, lo: int, hi: int, first: bool, last: bool) -> None:
        super().__init__()
        self.embed = Embed(gpt.transformer) if first else None
        self.h = nn.ModuleList(gpt.transformer.h[lo:hi])
        self.head = Head(gpt) if last else None

    def forward(self, x):
        if self.embed is not None:
            x = self.embed(x)
        for block in self.h:
            x = block(x)
            x = x[0] if isinstance(x, tuple) else x
        if self.head is not None:
            x = self.head(x)
        return x


def parts(layers: int, width: int, ranks: int):
    gpt = gpt2(layers, width)
    cut = [layers * r // ranks for r in range(ranks + 1)]
    return [Part(gpt, cut[r], cut[r + 1], r == 0, r == ranks - 1) for r in range(ranks)]


def loss_fn(out, target):
    return nn.functional.cross_entropy(out.flatten(0, 1), target.flatten())


def batch(size: int, seq: int):
    g = torch.Generator().manual_seed(1)
    return (torch.randint(0, VOCAB, (size, seq), generator=g), torch.randint(0, VOCAB, (size, seq), generator=g))


def checkpoint_blocks(module: nn.Module, every: int) -> None:
    """torchtitan's knob on one stage module: every `every`-th of its blocks
    (the 1st, … with 1: `mode = "full"`; the N-th, 2N-th, … with N:
    `"selective"` with `selective_ac_option = "N"`, counted per module as
    its per-process counter does) under non-reentrant `checkpoint`."""
    import functools

    from torch.utils.checkpoint import checkpoint

    def run(inner, *args, **kwargs):
        return checkpoint(inner, *args, use_reentrant=False, **kwargs)

    for i, block in enumerate(module.h, 1):
        if i % every == 0:
            block.forward = functools.partial(run, block.forward)


def train(rank: int, ranks: int, setup: dict, plans, steps: int = 2) -> dict:
    """`steps` optimizer steps of the pipeline; with `plans`, rank `rank`'s
    plan applied first (or, given `{"knob": N}`, torchtitan's knob:
    `checkpoint_blocks(module, N)`). Returns the parameters after them, the
    losses, the measured peak of the first two steps (the allocator's
    events, parameter gradients outside) and the wall time of the others."""
    import time

    from torch.distributed.pipelining import (PipelineStage, Schedule1F1B, ScheduleGPipe,
                                              ScheduleInterleaved1F1B)

    from remat_torch import Meter

    # Under the interleaved schedule each rank holds `chunks` stage modules,
    # PyTorch's stage indices rank, rank + p, …; otherwise one, its rank.
    chunks = setup.get("chunks", 1)
    stages = parts(setup["layers"], setup["width"], ranks * chunks)
    mine = [rank + c * ranks for c in range(chunks)]
    ids, target = batch(setup["batch"], setup["seq"])
    micro = setup["batch"] // setup["microbatches"]
    applied = []
    if isinstance(plans, dict):
        for k in mine:
            checkpoint_blocks(stages[k], plans["knob"])
    elif plans is not None:
        for k in mine:
            applied.append(plans.apply(k, stages[k], plans.example_input(stages, ids[:micro], k)))
    pipeline_stages = [PipelineStage(stages[k], k, ranks * chunks, torch.device("cpu")) for k in mine]
    if setup["schedule"] == "interleaved-1f1b":
        schedule = ScheduleInterleaved1F1B(pipeline_stages, n_microbatches=setup["microbatches"], loss_fn=loss_fn)
    else:
        kind = Schedule1F1B if setup["schedule"] == "1f1b" else ScheduleGPipe
        schedule = kind(pipeline_stages[0], n_microbatches=setup["microbatches"], loss_fn=loss_fn)
    params = [p for k in mine for p in stages[k].parameters()]
    opt = torch.optim.SGD(params, lr=0.1)
    meter = Meter(torch.device("cpu"), params)
    torch.manual_seed(1234 + rank)
    losses, peaks, seconds = [], [], []
    for step in range(steps):
        out: list = []

        def run():
            if rank == 0:
                schedule.step(ids)
            elif rank == ranks - 1:
                schedule.step(target=target, losses=out)
            else:
                schedule.step()

        if step < 2:
            _, _, peak = meter.measure(run)
            peaks.append(peak)
        else:
            start = time.perf_counter()
            run()
            seconds.append(time.perf_counter() - start)
        losses += [float(l.detach()) for l in out]
        opt.step()
        opt.zero_grad(set_to_none=True)
    return {
        "params": {f"{k}.{n}": p.detach().clone() for k in mine for n, p in stages[k].named_parameters()},
        "losses": losses,
        "peaks": peaks,
        "seconds": seconds,
        "form": "+".join(a.form for a in applied) if applied else None,
    }


def main(rank: int, ranks: int, port: int, setup: dict, plans, out: str) -> None:
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=ranks)
    try:
        plain = train(rank, ranks, setup, None)
        dist.barrier()
        planned = train(rank, ranks, setup, plans)
        differs = [n for n in plain["params"] if not torch.equal(plain["params"][n], planned["params"][n])]
        Path(out, f"rank{rank}.json").write_text(json.dumps({
            "differs": differs,
            "losses_plain": plain["losses"],
            "losses_planned": planned["losses"],
            "peak_plain": plain["peaks"],
            "peak_planned": planned["peaks"],
            "form": planned["form"],
        }))
        # Every rank done with the group before any tears it down: a rank
        # that destroys it while another's gloo threads still talk to it
        # can abort ("terminate called without an active exception",
        # SIGABRT in one CI run of test_fsdp).
        dist.barrier()
    finally:
        dist.destroy_process_group()
