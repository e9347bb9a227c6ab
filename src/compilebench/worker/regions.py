"""Regional compilation: a model's repeated stack of blocks found, and each block compiled on its own.

The eager model the mode is timed against stays as it was: the regional model is a shallow copy of the modules
on the way to the stack, sharing every parameter, whose blocks are replaced by their compiled (or marked) form.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import nn

from ..core.errors import Unsupported, UserError
from .models import LogitsOnly


@dataclass(frozen=True)
class Stack:
    """A repeated stack: its dotted path from the model, its blocks' class and how many there are."""

    path: str
    block_class: str
    blocks: int

    def record(self, how: str) -> dict:
        return {**asdict(self), "how": how}


def own_model(module: nn.Module) -> tuple[nn.Module, str]:
    """The model a user's path is relative to, and the prefix from `module` to it: a transformers model under
    compilebench's logits adapter is addressed as itself (`model.layers`, not `model.model.layers`)."""
    return (module.model, "model.") if isinstance(module, LogitsOnly) else (module, "")


def stacks(model: nn.Module) -> list[Stack]:
    """Every ModuleList or Sequential of two or more children of one class, longest first."""
    found = []
    for path, module in model.named_modules():
        children = list(module.children())
        if isinstance(module, (nn.ModuleList, nn.Sequential)) and len(children) >= 2:
            if len({type(child) for child in children}) == 1:
                found.append(Stack(path, type(children[0]).__name__, len(children)))
    return sorted(found, key=lambda s: -s.blocks)


def how(regional: bool | str) -> str:
    """`nested`: one marked region in a whole-model compile; else `blocks`, each block compiled on its own."""
    return "nested" if regional == "nested" else "blocks"


def find(model: nn.Module, regional: bool | str, key: str, model_key: str) -> Stack:
    """The stack `regional` names (`true`: the longest), or a refusal naming the mode's key and the model's."""
    found = stacks(model)
    listed = ", ".join(f"{s.path} ({s.blocks} × {s.block_class})" for s in found[:6]) or "none"
    if regional is True or regional == "nested":
        if not found:
            raise UserError(
                f"Config key `{key}` compiles the repeated stack of `{model_key}` ({type(model).__name__}), which "
                "has none: no nn.ModuleList or nn.Sequential of two or more blocks of one class. Expected a model "
                "with repeated blocks (a transformer's layers), or a `modes` list for this model without the mode."
            )
        tied = [s for s in found if s.blocks == found[0].blocks]
        if len(tied) > 1:
            raise UserError(
                f"Config key `{key}` compiles the longest repeated stack of `{model_key}`, but "
                f"{len(tied)} stacks tie at {found[0].blocks} blocks ({listed}): expected the stack's path, such as "
                f"`regional: {tied[0].path}`."
            )
        return found[0]
    chosen = next((s for s in found if s.path == regional), None)
    if chosen is None:
        raise UserError(
            f"Config key `{key}` is {regional!r}, which names no repeated stack of `{model_key}` "
            f"({type(model).__name__}): expected the dotted path of a ModuleList or Sequential of two or more blocks "
            f"of one class; its stacks: {listed}."
        )
    return chosen


def _shallow(module: nn.Module) -> nn.Module:
    """A copy sharing parameters, buffers and hooks, whose children can be replaced leaving the original's."""
    clone = copy.copy(module)
    clone._modules = copy.copy(module._modules)
    return clone


def with_blocks(root: nn.Module, path: str, replace: Callable[[nn.Module], nn.Module]) -> nn.Module:
    """`root` with each block of the stack at `path` replaced by `replace(block)`; `root` itself unchanged."""
    copied = parent = _shallow(root)
    for part in path.split("."):
        child = _shallow(parent._modules[part])
        parent._modules[part] = child
        parent = child
    for name, block in list(parent._modules.items()):
        parent._modules[name] = replace(block)
    return copied


def nested_marker() -> Callable:
    """torch's marker of a region compiled once and reused, or why this torch has none."""
    marker = getattr(torch.compiler, "nested_compile_region", None)
    if marker is None:
        raise Unsupported(
            f"regional: nested marks blocks with torch.compiler.nested_compile_region, which torch "
            f"{torch.__version__} does not have"
        )
    return marker


def _marked(block_class: type, marker: Callable) -> Callable[[nn.Module], nn.Module]:
    """Each block's copy becomes an instance of a subclass whose forward is marked, as torch documents the marker on
    a block's forward: Dynamo then traces one region and calls it with each block's own parameters. (A marked
    function bound to each copy instead reuses the first block's weights in every block.)"""
    marked_class = type(block_class.__name__, (block_class,), {"forward": marker(block_class.forward)})

    def mark(block: nn.Module) -> nn.Module:
        clone = _shallow(block)
        clone.__class__ = marked_class
        return clone

    return mark


def compile_regions(module: nn.Module, regional: bool | str, compile_kwargs: dict, key: str, model_key: str):
    """`module` compiled region by region as `regional` says, and the record of the regions."""
    model, prefix = own_model(module)
    stack = find(model, regional, key, model_key)
    path = prefix + stack.path
    if regional == "nested":
        block_class = type(next(model.get_submodule(stack.path).children()))
        marked = with_blocks(module, path, _marked(block_class, nested_marker()))
        return torch.compile(marked, **compile_kwargs), stack.record(how(regional))
    compiled = with_blocks(module, path, lambda block: torch.compile(block, **compile_kwargs))
    return compiled, stack.record(how(regional))
