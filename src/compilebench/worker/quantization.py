"""Weight quantization with torchao before a mode compiles: a quantized copy of the model, what it weighs, and what
torchao changed on the way.

torchao is optional (`pip install -e ".[quant]"`); it is imported only where a mode quantizes.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from ..core.errors import Unsupported, UserError
from ..core.experiment import Quantize
from ..core.modes import TORCHAO_INSTALL

# The methods a mode definition may name, and torchao's config class for each.
METHODS = {
    "int8_weight_only": "Int8WeightOnlyConfig",
    "int8_dynamic_activation_int8_weight": "Int8DynamicActivationInt8WeightConfig",
    "int4_weight_only": "Int4WeightOnlyConfig",
}


def _torchao(key: str):
    try:
        import torchao
        import torchao.quantization
    except ImportError as exc:
        raise UserError(
            f"Config key `{key}` quantizes with torchao, which this Python (torch {torch.__version__}) cannot "
            f"import ({exc}): expected torchao installed beside torch, with `{TORCHAO_INSTALL}` (or `pip install "
            "torchao` in a platform's own Python environment)."
        ) from None
    return torchao


def torchao_config(quantize: Quantize, key: str):
    """torchao's config object for a definition's `quantize` settings."""
    torchao = _torchao(key)
    config_class = getattr(torchao.quantization, METHODS[quantize.method])
    options = {"group_size": quantize.group_size} if quantize.group_size else {}
    return config_class(**options)


def check(key: str, quantize: Quantize) -> dict:
    """torchao's version and the config it builds, or the clear error when torchao is missing."""
    config = torchao_config(quantize, key)
    return {"torchao": _torchao(key).__version__, "config": type(config).__name__}


def quantized_copy(module: nn.Module, quantize: Quantize, key: str) -> tuple[nn.Module, dict]:
    """A copy of `module` with its weights quantized as `quantize` says (the original stays float), and the record:
    weight bytes before and after, the share of the weights quantized, the tensor types, and the inductor settings
    torchao changed."""
    from torch._inductor import config as inductor

    torchao = _torchao(key)
    config = torchao_config(quantize, key)
    settings_before = inductor.get_config_copy()
    quantized = copy.deepcopy(module)
    try:
        torchao.quantization.quantize_(quantized, config)
    except Exception as exc:  # torchao reports an unsupported method or device through many types
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise Unsupported(
            f"torchao {torchao.__version__} cannot apply {quantize.method}: {type(exc).__name__}: {reason}"
        ) from exc
    settings_after = inductor.get_config_copy()
    original, stored = weights(module), weights(quantized)
    changed = [name for name, tensor in stored.items() if is_quantized(tensor)]
    if not changed:
        layers = sorted(
            {type(m).__name__ for m in module.modules() if next(m.parameters(recurse=False), None) is not None}
        )
        raise Unsupported(
            f"torchao {torchao.__version__} quantized none of the model's weights with {quantize.method} (it "
            f"quantizes linear layers; this model's weights are in {', '.join(layers) or 'no layer'}): the mode would "
            "time the float32 model under a quantized label"
        )
    return quantized, {
        "method": quantize.method,
        "torchao": torchao.__version__,
        "config": type(config).__name__,
        "weight_bytes": total_bytes(original),
        "weight_bytes_quantized": total_bytes(stored),
        "quantized_share": sum(storage_bytes(original[n]) for n in changed) / max(1, total_bytes(original)),
        "quantized_tensors": len(changed),
        "tensor_types": sorted({type(stored[n]).__name__ for n in changed}),
        "inductor_changed": {
            name: {"before": settings_before[name], "after": value}
            for name, value in settings_after.items()
            if settings_before.get(name) != value and _plain(value)
        },
    }


def _plain(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def weights(module: nn.Module) -> dict[str, torch.Tensor]:
    """A module's parameters and buffers by name, each tensor once."""
    named = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    seen, unique = set(), {}
    for name, tensor in named.items():
        if id(tensor) not in seen:
            seen.add(id(tensor))
            unique[name] = tensor
    return unique


def total_bytes(tensors: dict[str, torch.Tensor]) -> int:
    return sum(storage_bytes(t) for t in tensors.values())


def is_quantized(tensor: torch.Tensor) -> bool:
    """Whether a weight is held as a tensor subclass over other tensors, as torchao stores quantized weights."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return is_traceable_wrapper_subclass(tensor)


def storage_bytes(tensor: torch.Tensor) -> int:
    """The bytes a tensor holds: for a quantized weight, those of the tensors it is made of (data, scales, zeros)."""
    if is_quantized(tensor):
        names, _ = tensor.__tensor_flatten__()
        return sum(storage_bytes(getattr(tensor, name)) for name in names)
    return tensor.numel() * tensor.element_size()
