"""What a capture freezes, found rather than run silently wrong.

`checkpointed` runs the stages `torch.export` captured; it never calls the
model's Python `forward` again. Whatever that forward did in Python rather
than with tensors happened once, at capture, on fake tensors:

* a module hook (forward, pre-forward, backward) ran once, at capture, and
  never while training: refused before capture, naming the module and the
  hook (`refuse_hooks`);
* a forward that changes a module's Python attribute (a step counter)
  changed it once: refused at capture, naming the attribute;
* a Python attribute a forward branches on (`if self.step % 2`), changed
  by the training loop after capture, leaves the captured branch in place:
  every step compares the modules' plain attributes (bools, numbers,
  strings, None) with their values at capture and refuses a change, naming
  it (`PythonState.check`), and a hook registered since is refused as
  above. A step costs one pass over those attributes and the modules'
  hook dicts, listed at capture (38 µs on a timm ViT-Tiny's 276 modules
  and 635 attributes, where walking the modules for hooks took 170 µs).

Not seen: state outside the modules (a global, a closure, the config
object a module keeps), and attributes added after capture.
"""

from __future__ import annotations

import contextlib
from typing import Any, Dict, List, Tuple

from torch import nn

_SCALARS = (bool, int, float, str, type(None))
_HOOKS = (
    ("_forward_pre_hooks", "a forward pre-hook"),
    ("_forward_hooks", "a forward hook"),
    ("_backward_pre_hooks", "a backward pre-hook"),
    ("_backward_hooks", "a backward hook"),
)
_GLOBAL_HOOKS = (
    ("_global_forward_pre_hooks", "register_module_forward_pre_hook"),
    ("_global_forward_hooks", "register_module_forward_hook"),
    ("_global_backward_pre_hooks", "register_module_full_backward_pre_hook"),
    ("_global_backward_hooks", "register_module_full_backward_hook"),
)
_WHY = (
    "checkpointed runs the stages torch.export captured and never calls the model's Python forward, so "
    "it would have run once, at capture, on fake tensors, and never while training"
)


class FrozenStateError(RuntimeError):
    """Python state the captured stages cannot follow (module docstring)."""


def _hook_name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _first_hook(model: nn.Module, modules) -> "str | None":
    """Who holds the first module hook found (global ones first), in words;
    None when there is none."""
    import torch.nn.modules.module as module_impl

    for attr, register in _GLOBAL_HOOKS:
        for fn in (getattr(module_impl, attr, None) or {}).values():
            return f"a global module hook ({_hook_name(fn)}, torch.nn.modules.module.{register}) is registered"
    for name, m in modules if modules is not None else model.named_modules():
        for attr, what in _HOOKS:
            for fn in (getattr(m, attr, None) or {}).values():
                # transformers' switch leaves this one behind when turned off.
                tip = (" (transformers' gradient_checkpointing_enable put it there; "
                       "model.disable_input_require_grads() takes it off)"
                       if "make_inputs_require_grads" in _hook_name(fn) else "")
                return (f"{name or type(model).__name__}: {what} ({_hook_name(fn)}) is registered on this "
                        f"{type(m).__name__}{tip}")
    return None


def _any_global_hook() -> bool:
    import torch.nn.modules.module as module_impl

    return any(getattr(module_impl, attr, None) for attr, _ in _GLOBAL_HOOKS)


def refuse_hooks(model: nn.Module, modules=None) -> None:
    """Raises FrozenStateError naming the first module hook found (global
    ones first); `modules`: `model.named_modules()`, listed once."""
    found = _first_hook(model, modules)
    if found is not None:
        raise FrozenStateError(
            f"{found}: {_WHY}. Remove it while training with a plan, or pass the stages yourself as a "
            "list of modules (their forward runs, with its hooks)"
        )


class PythonState:
    """The plain attributes of every module of a model, at one instant."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.modules = list(model.named_modules())
        # Writes seen while capturing (`watching_writes`).
        self.writes: List[str] = []
        self.entries: List[Tuple[str, Dict[str, Any], str, Any]] = [
            (name, m.__dict__, key, value)
            for name, m in self.modules
            for key, value in m.__dict__.items()
            if not key.startswith("_") and isinstance(value, _SCALARS)
        ]
        # Every module's hook dicts, listed once: `register_*_hook` adds to
        # these very dicts, so a step asks only whether one is non-empty
        # and walks the modules for the message only then.
        self.hook_dicts = [d for _, m in self.modules for attr, _ in _HOOKS
                           for d in [getattr(m, attr, None)] if d is not None]

    def changes(self) -> List[str]:
        """`module.attribute: then → now` for each attribute changed since."""
        out = []
        for name, d, key, then in self.entries:
            now = d.get(key, _Missing)
            if now is not then and not (type(now) is type(then) and now == then):
                shown = "removed" if now is _Missing else repr(now)
                out.append(f"{name + '.' if name else ''}{key}: {then!r} → {shown}")
        return out

    def check(self) -> None:
        """Raises FrozenStateError when an attribute changed since capture,
        or a hook was registered."""
        changed = self.changes()
        if changed:
            more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
            raise FrozenStateError(
                f"{changed[0]}{more} since the stages were captured: checkpointed runs the captured "
                "stages, in which every Python value the model's forward read is frozen as it was at "
                "capture, so a branch on it would not follow. Keep such state out of the modules while "
                "training with a plan, or pass the stages yourself as a list of modules"
            )
        if _any_global_hook() or any(self.hook_dicts):
            refuse_hooks(self.model, self.modules)


class _Missing:
    pass


@contextlib.contextmanager
def watching_writes(state: PythonState):
    """Records, while capturing, every write of a plain attribute of one of
    the model's modules that changes its value (`state.writes`). torch.export
    puts such attributes back after it ran the forward, so comparing them
    afterwards sees nothing: the writes themselves are watched, through
    `nn.Module.__setattr__`."""
    names = {id(m): name for name, m in state.modules}
    original = nn.Module.__setattr__

    def setattr_watched(module, key, value):
        name = names.get(id(module))
        if name is not None and not key.startswith("_") and isinstance(value, _SCALARS):
            old = module.__dict__.get(key, _Missing)
            if old is not value and not (type(old) is type(value) and old == value):
                state.writes.append(f"{name + '.' if name else ''}{key}: {old!r} → {value!r}")
        original(module, key, value)

    nn.Module.__setattr__ = setattr_watched
    try:
        yield
    finally:
        nn.Module.__setattr__ = original


def refuse_changes_by_capture(before: PythonState) -> None:
    """Raises FrozenStateError when capturing (one run of the model's
    forward) changed a module's attribute (`watching_writes`): a forward
    that keeps Python state (a counter) would change it on every step, the
    stages never."""
    changed = before.writes or before.changes()
    if changed:
        raise FrozenStateError(
            f"{changed[0]} while the model's forward was captured"
            + (f" (and {len(changed) - 1} more)" if len(changed) > 1 else "")
            + ": the forward changes Python state, which the captured stages never do (they hold "
            "no Python). Keep the state out of forward (a counter the training loop advances is "
            "refused too: a branch on it is frozen), or pass the stages yourself as a list of modules"
        )

