"""The records of one step's tensors, as the runtime (`remat_torch.step`) holds them.

Each logical tensor of docs/model.md is one record here:

* a^ℓ — `Activation`: a plain tensor with no autograd history (the output of
  F_ck^ℓ / F_∅^ℓ, or the input batch a^0);
* ā^ℓ — `Saved`: what F_all^ℓ leaves for B^ℓ: the stage's output a^ℓ with
  its autograd graph, the detached alias of the input the graph stops at,
  and the storages of the tensors autograd saved for the backward (found with
  `torch.autograd.graph.saved_tensors_hooks`; parameters, buffers, the
  stage's input and the target are not part of ā^ℓ);
* δ^ℓ — a plain gradient tensor (δ^L, the loss seed, is a 1 made in B^L).

Where a record is (device, host) is read from the tensors themselves — a
device copy is there when its storages are allocated, a host copy when the
record holds host buffers — so `last_states` reports what the wrapper really
holds, not what it meant to do. A release (R) forgets a record: its storages
are resized to 0 and a host copy dropped.

An F_all with a menu option (`"option": k`, a policy named in the chain's
menu) runs the stage under that selective checkpoint
(`remat_torch.policies`): ā^ℓ is then the output and what the checkpoint
keeps, and B^ℓ recomputes the rest.

The input of stage ℓ is not part of ā^ℓ: B^ℓ back-propagates through the
graph of F_all^ℓ reading whichever input is on the device when it runs
(`StageInput`), as the simulator's B^ℓ does, so the one F_all^ℓ ran on may
have been released or offloaded and recomputed in between.
"""


from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

import torch

from .host import host_buffer


def storage_key(st: torch.UntypedStorage) -> int:
    # One StorageImpl may be seen through many Python storage objects;
    # `_cdata` is its address, stable while the storage lives.
    return st._cdata


class Moved:
    """Storages that move to the host and back as one tensor of the model.

    Offload copies every storage to a host buffer, then frees the device
    memory with `untyped_storage().resize_(0)`; prefetch re-allocates it
    with `resize_(nbytes)` and copies back. This is the trick FSDP uses for
    its flat parameters, chosen over pack/unpack holders because every
    tensor that views the storage — the autograd graph's saved tensors, the
    output the next stage's input aliases, views inside the graph — sees the
    data leave and come back in place: the device memory is really freed
    even though the graph still references those tensors, and nothing needs
    re-binding on the way back. A holder in a pack hook could only drop its
    own reference, and the graph or the next stage would keep the memory.
    """

    def __init__(self, storages: Iterable[torch.UntypedStorage]) -> None:
        seen: Dict[int, torch.UntypedStorage] = {}
        for st in storages:
            if st.nbytes() > 0:
                seen.setdefault(storage_key(st), st)
        self.storages: List[torch.UntypedStorage] = list(seen.values())
        self.sizes: List[int] = [st.nbytes() for st in self.storages]
        self.host: Optional[List[torch.Tensor]] = None
        # CUDA: the event after which the device copy can be read again.
        self.ready: Optional[torch.cuda.Event] = None

    def on_device(self) -> bool:
        """Whether the tensor is on the device as the schedule sees it: an
        offloaded one (it has a host copy) is not, even while its device
        copy is still held (`offload(hold=True)`)."""
        return self.host is None and all(st.nbytes() == n for st, n in zip(self.storages, self.sizes))

    def on_host(self) -> bool:
        return self.host is not None

    @staticmethod
    def _bytes(st: torch.UntypedStorage) -> torch.Tensor:
        return torch.empty(0, dtype=torch.uint8, device=st.device).set_(st)

    def offload(self, copy_stream: Optional["torch.cuda.Stream"], hold: bool = False) -> None:
        """O: copy to the host, then free the device copy — at once, or with
        `hold` when `free_device` is called: where the simulator frees it,
        once the copy has ended (`Schedule.offload_frees`). Freed at once,
        the allocator's count drops before the copy would end in the
        simulation (on CUDA the block is still reserved for the copy), and
        the measured peak falls below the predicted one."""
        if copy_stream is not None:
            # The copy starts once the producer (compute issued so far) ends.
            copy_stream.wait_stream(torch.cuda.current_stream())
        self.host = []
        for st, n in zip(self.storages, self.sizes):
            dev = self._bytes(st)
            if copy_stream is None:
                host = host_buffer(n)
                host.copy_(dev)
            else:
                host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
                with torch.cuda.stream(copy_stream):
                    host.copy_(dev, non_blocking=True)
                # The caching allocator must not hand the block to the compute
                # stream before the copy has read it: the memory is freed
                # "when the copy ends", as in the simulator.
                dev.record_stream(copy_stream)
            self.host.append(host)
            del dev
        if not hold:
            self.free_device()

    def free_device(self) -> None:
        """An offloaded tensor's device copy freed, if still held (its copy
        stream marked: on CUDA the block is reused only once the copy has
        read it). A host copy and a device copy never both stand for the
        tensor otherwise: a prefetch drops the host's."""
        if self.host is not None:
            for st in self.storages:
                st.resize_(0)

    def prefetch(self, copy_stream: Optional["torch.cuda.Stream"]) -> None:
        assert self.host is not None
        self.free_device()
        for st, n, host in zip(self.storages, self.sizes, self.host):
            # Allocated on the compute stream at issue time: the simulator
            # takes the memory when the transfer starts.
            st.resize_(n)
            dev = self._bytes(st)
            if copy_stream is None:
                dev.copy_(host)
            else:
                # Issued after the compute operation listed before it (and
                # after this allocation, made on the compute stream).
                copy_stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(copy_stream):
                    dev.copy_(host, non_blocking=True)
                dev.record_stream(copy_stream)
        if copy_stream is not None:
            self.ready = torch.cuda.Event()
            self.ready.record(copy_stream)
        self.host = None

    def release(self) -> None:
        """R: forget the tensor. A device copy's storages are resized to 0,
        as an offload does but with no copy: the memory is freed although
        the next stage's input alias still views it (the graph of that
        stage reads its input through `StageInput`, not through this
        storage). On CUDA the compute stream frees it after the operations
        issued so far — the simulator's "at the end of the compute operation
        listed before it" — and a prefetch still copying into it marked the
        block used by the copy stream, so it is reused only once that copy
        ends. A host copy is dropped."""
        for st in self.storages:
            st.resize_(0)
        self.host = None
        self.ready = None

    def forget(self, storage: Optional[torch.UntypedStorage] = None) -> None:
        """Stop holding one storage (all of them when None) without freeing
        it: whoever else holds it (an autograd graph) decides when it goes.
        `Step.drop_input` lets a^{ℓ-1} go as B^ℓ starts this way (ι^ℓ)."""
        if storage is None:
            self.storages, self.sizes = [], []
            return
        key = storage_key(storage)
        kept = [(st, n) for st, n in zip(self.storages, self.sizes) if storage_key(st) != key]
        self.storages = [st for st, _ in kept]
        self.sizes = [n for _, n in kept]

    def wait(self) -> None:
        """Make the compute stream wait for a prefetch still in flight."""
        if self.ready is not None:
            torch.cuda.current_stream().wait_event(self.ready)
            self.ready = None


class Activation:
    """a^ℓ: a plain tensor; `checkpoint` is set by F_ck^{ℓ+1}."""

    def __init__(self, value: Optional[torch.Tensor]) -> None:
        # None for a^0 of a model whose stages were found: stage 1 reads
        # the step constants, which the step holds (`Step.consts`).
        self.value = value
        self.checkpoint = False
        self.moved = Moved([] if value is None else [value.untyped_storage()])

    def tensor(self) -> torch.Tensor:
        return self.value


def _layout(t: torch.Tensor) -> Tuple:
    return (tuple(t.size()), t.stride(), t.storage_offset(), t.dtype, t.untyped_storage().nbytes())


class StageInput:
    """The input of stage ℓ as its graph reads it at B^ℓ.

    The model's ā^ℓ does not contain the input: B^ℓ reads whichever of
    a^{ℓ-1}, ā^{ℓ-1} is on the device then, and a schedule may have
    released (or offloaded) the tensor F_all^ℓ ran on and recomputed it
    since — DTR and DELTA release ā^{ℓ-1} and recompute a^{ℓ-1} before B^ℓ.
    So the tensors autograd saves from the input's storage are not kept as
    tensors (they would keep the released memory alive, or read a storage
    resized to 0): they are kept as `InputView`s, and B^ℓ binds `now` to
    the input that is resident when it runs. A recomputation runs the same
    kernels on the same values, so the bytes are the same."""

    def __init__(self, alias: torch.Tensor) -> None:
        self.key = storage_key(alias.untyped_storage())
        self.layout = _layout(alias)
        self.now: Optional[torch.Tensor] = None
        # Whether the graph saved anything from the input: if not, B^ℓ
        # binds nothing, and the input can be freed as it starts (ι^ℓ).
        self.read = False

    def bind(self, l: int, current: torch.Tensor) -> None:
        if _layout(current) != self.layout:
            # Never seen: F_ck/F_∅ and F_all of one stage give one layout.
            raise RuntimeError(
                f"B^{l}: the input resident now has another memory layout than the one "
                f"F_all^{l} ran on ({_layout(current)} ≠ {self.layout})"
            )
        self.now = current


class InputView:
    """A tensor autograd saved that lies in the stage's input storage
    (the input itself, or a view of it): its place in that storage, read
    from the input bound at B^ℓ."""

    __slots__ = ("source", "dtype", "offset", "size", "stride")

    def __init__(self, source: StageInput, t: torch.Tensor) -> None:
        self.source = source
        source.read = True
        self.dtype, self.offset, self.size, self.stride = t.dtype, t.storage_offset(), t.size(), t.stride()

    def tensor(self) -> torch.Tensor:
        now = self.source.now
        assert now is not None, "an input view was unpacked outside B^ℓ"
        out = torch.empty(0, dtype=self.dtype, device=now.device)
        return out.set_(now.untyped_storage(), self.offset, self.size, self.stride)


class Entry(torch.autograd.Function):
    """The input of a recording forward: a view of the stage's input whose
    gradient is handed to the caller as autograd computed it. A leaf with
    `requires_grad` would do the same through `.grad`, but AccumulateGrad
    re-lays a gradient out to the leaf's strides (the "layout contract"), an
    extra copy that changes the kernels the previous stage's backward runs
    (timm's ConvNeXt then differs from a plain step in the last bits).
    `anchor` is a 0-d tensor that requires grad, so the view records a graph
    even when nothing before it does; it receives no gradient."""

    @staticmethod
    def forward(ctx, inp: torch.Tensor, anchor: torch.Tensor, box: list) -> torch.Tensor:
        ctx.box = box
        return inp.view_as(inp)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        ctx.box.append(grad)
        ctx.box = None
        return None, None, None


class Seed(torch.autograd.Function):
    """Starts B^ℓ with δ^ℓ handed over: the runtime keeps no reference to it,
    so autograd frees it after its last reader, as in a plain step (a
    tensor passed to `torch.autograd.backward` stays referenced by the
    caller's frame until the call returns)."""

    @staticmethod
    def forward(ctx, out: torch.Tensor, box: list) -> torch.Tensor:
        ctx.box = box
        return out.new_zeros(())

    @staticmethod
    def backward(ctx, _grad: torch.Tensor):
        delta = ctx.box.pop()
        ctx.box = None
        return delta, None


class EarlySeed:
    """B^ℓ's start, made before B^ℓ runs, so that the stage output a^ℓ can
    be freed first: a `Seed` node on the output's graph (which holds the
    output's grad_fn, not its storage) and the box δ^ℓ goes into. The
    runtime makes one when B^{ℓ+1} starts and a^ℓ is its input: if neither
    graph reads a^ℓ (a loss's logits), a^ℓ is freed then, as the chain's
    ι^{ℓ+1} says."""

    def __init__(self, out: torch.Tensor) -> None:
        self.box: list = []
        with torch.enable_grad():
            self.seed = Seed.apply(out, self.box)


def backward_handing_over(out_box: list, delta_box: list) -> None:
    """B^ℓ as autograd runs it in a plain step: `out_box` holds the stage's
    output (the only reference the caller keeps) or its `EarlySeed`,
    `delta_box` δ^ℓ (empty for the loss, whose seed is autograd's implicit
    1). Both are emptied before the engine runs, so the output and δ^ℓ are
    freed as soon as their last reader has run."""
    out = out_box.pop()
    if isinstance(out, EarlySeed):
        out.box.extend(delta_box)
        delta_box.clear()
        seed = out.seed
        del out
        torch.autograd.backward(seed)
        return
    if not delta_box:
        # The loss: autograd seeds it with 1 (a 4-byte tensor it makes).
        torch.autograd.backward(out)
        return
    seed = Seed.apply(out, delta_box)
    del out
    torch.autograd.backward(seed)


class Saved:
    """ā^ℓ: the stage output with its graph, the input alias it stops at,
    and the storages of the graph's saved tensors (plus the output's)."""

    def __init__(self, out: torch.Tensor, alias: Optional[torch.Tensor], storages: List[torch.UntypedStorage],
                 stage_input: Optional[StageInput], grad_box: list) -> None:
        self.out = out
        # B^ℓ's start once `out` is dropped early (`Step.drop_input`).
        self.seed: Optional[EarlySeed] = None
        self.alias = alias
        self.stage_input = stage_input
        # δ^{ℓ-1} lands here when B^ℓ runs (`Entry`).
        self.grad_box = grad_box
        self.moved = Moved([out.untyped_storage(), *storages])
        # Not taken apart: its graph may be joined by stage ℓ+1's.
        self.whole = stage_input is None
        # Its graph continues into ā^{ℓ-1}'s (one engine call for both).
        self.joined = False
        # The parameters several stages read that the stages of its engine
        # call read (this one's and those it is joined to): a stage reading
        # one of them again does not join (`Step.forward`).
        self.run_shared: frozenset = frozenset()
        # Already back-propagated by the engine call of a later stage's B.
        self.done = False
        self.d_prev: Optional[torch.Tensor] = None

    def tensor(self) -> torch.Tensor:
        return self.out
