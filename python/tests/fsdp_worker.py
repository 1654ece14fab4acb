"""A rank of the FSDP2 test (test_fsdp.py): a transformers GPT-2 sharded
with `fully_shard` per block and at the root, trained with gloo on the
CPU, once without a plan and once with a Remat plan applied first
(torchtitan's order: checkpointing, then sharding)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from torch import nn

VOCAB = 128
# Training steps per run, each measured: a step's reading holds, at random,
# whole gathered blocks more than the same step's others (see `reserve`),
# so the test compares the lowest reading of several.
STEPS = 3


def gpt2(layers: int, width: int):
    import transformers

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=layers, n_embd=width, n_head=4, vocab_size=VOCAB, n_positions=64,
                                  bos_token_id=0, eos_token_id=0, attn_pdrop=0.1, resid_pdrop=0.1,
                                  embd_pdrop=0.1)
    return transformers.GPT2LMHeadModel(cfg)


def loss_fn(out, target):
    return nn.functional.cross_entropy(out.logits.flatten(0, 1), target.flatten())


def batch(size: int, seq: int, rank: int):
    g = torch.Generator().manual_seed(1 + rank)
    return (torch.randint(0, VOCAB, (size, seq), generator=g), torch.randint(0, VOCAB, (size, seq), generator=g))


def train(rank: int, setup: dict, plan) -> dict:
    from torch.distributed.fsdp import fully_shard

    from remat_torch import Meter, apply_plan

    model = gpt2(setup["layers"], setup["width"])
    ids, target = batch(setup["batch"], setup["seq"], rank)
    applied = apply_plan(model, plan, ids) if plan is not None else None
    for block in model.transformer.h:
        fully_shard(block)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    meter = Meter(torch.device("cpu"), list(model.parameters()))
    torch.manual_seed(1234 + rank)
    losses, peaks = [], []
    for _ in range(STEPS):
        def step():
            loss = loss_fn(model(ids), target)
            loss.backward()
            return loss

        loss, _, peak = meter.measure(step)
        losses.append(float(loss.detach()))
        peaks.append(peak)
        opt.step()
        opt.zero_grad(set_to_none=True)
    full = {n: p.full_tensor().detach().clone() for n, p in model.named_parameters()}
    return {"params": full, "losses": losses, "peaks": peaks, "form": applied.form if applied else None,
            "predicted": applied.predicted if applied else None}


def reserve(rank: int, setup: dict, m_high: int):
    """What FSDP2 adds to a plain step at batch 1 (`fsdp_reserve`), and
    what `fsdp_budget` keeps for one recomputed block."""
    from torch.distributed.fsdp import fully_shard

    from remat_torch import fsdp_budget, fsdp_reserve

    model = gpt2(setup["layers"], setup["width"])
    for block in model.transformer.h:
        fully_shard(block)
    fully_shard(model)
    ids, target = batch(1, setup["seq"], rank)
    torch.manual_seed(99)
    # The lowest of four one-pass readings, not `fsdp_reserve`'s own
    # highest: under gloo on the CPU a pass reads 0, 1 or 2 gathered blocks
    # (199,936 B) above the same pass's other readings, at random (30
    # passes: +1 in 1–12, +2 in 0–1; the allocator's free of a gathered
    # block is, in those passes, not among the profiler's events), so the
    # test compares the lowest readings on both sides.
    readings = [fsdp_reserve(model, loss_fn, ids, target, m_high, steps=1) for _ in range(4)]
    measured = min(readings)
    one_block = fsdp_budget(64 << 20, model, measured, recompute_blocks=0) - fsdp_budget(
        64 << 20, model, measured, recompute_blocks=1)
    return measured, one_block, readings


def main(rank: int, ranks: int, port: int, setup: dict, plan, out: str) -> None:
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=ranks)
    try:
        measured_reserve, one_block, reserve_readings = reserve(rank, setup, setup["m_high_batch1"])
        plain = train(rank, setup, None)
        planned = train(rank, setup, plan)
        differs = [n for n in plain["params"] if not torch.equal(plain["params"][n], planned["params"][n])]
        Path(out, f"rank{rank}.json").write_text(json.dumps({
            "differs": differs,
            "losses_plain": plain["losses"],
            "losses_planned": planned["losses"],
            "peak_plain": plain["peaks"],
            "peak_planned": planned["peaks"],
            "form": planned["form"],
            "predicted": planned["predicted"],
            "reserve": measured_reserve,
            "reserve_readings": reserve_readings,
            "one_block": one_block,
        }))
        # Every rank done with the group before any tears it down: a rank
        # that destroys it while another's gloo threads still talk to it
        # can abort ("terminate called without an active exception",
        # SIGABRT in one CI run of test_fsdp).
        dist.barrier()
    finally:
        dist.destroy_process_group()
