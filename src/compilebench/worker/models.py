"""Model builders: a config entry in, a module and its inputs out.

Every model is wrapped so that it maps input tensors to one output tensor
(logits), which is what TorchScript, correctness checks and timing want.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..core.errors import UserError
from ..core.experiment import ModelSpec
from ..core.layout import WEIGHTS_DIR
from .memory import PeakLiveBytes, device_total_bytes

log = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


_TRANSFORMERS_AUTO = {
    "image-classification": "AutoModelForImageClassification",
    "text-classification": "AutoModelForSequenceClassification",
    "fill-mask": "AutoModelForMaskedLM",
    "text-generation": "AutoModelForCausalLM",
}


class ModelError(UserError):
    """A model entry that cannot be built; the message names the key."""


class LogitsOnly(nn.Module):
    """Return a Hugging Face model's logits as a plain tensor."""

    def __init__(self, model: nn.Module, input_name: str):
        super().__init__()
        self.model = model
        self.input_name = input_name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(**{self.input_name: x}).logits


@dataclass
class BuiltModel:
    """A built model: the module to time, its inputs, and what correctness needs."""

    name: str
    task: str
    module: nn.Module
    inputs: tuple[torch.Tensor, ...]
    labels: list[str] | None = None
    causal_lm: nn.Module | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    memory_estimate: dict[str, Any] = field(default_factory=dict)  # check_fits: what the memory guard knew


def build(name: str, spec: ModelSpec, seed: int, device: str) -> BuiltModel:
    """Build the model named `name` from its config entry, on `device`, in eval mode."""
    estimate = check_fits(name, spec, device)
    torch.manual_seed(seed)  # seeds the CPU and every GPU
    # Random weights are initialised where they run: a 7B model on the CPU takes minutes and 28 GB.
    with torch.device(device) if spec.weights == "random" else contextlib.nullcontext():
        if spec.source == "torchvision":
            module = _torchvision_model(name, spec)
            inputs = (_image_input(name, spec, spec.image_size, seed),)
            built = BuiltModel(name, spec.task, module, inputs)
        else:
            hf_model, tokenizer = _transformers_model(name, spec)
            built = _transformers_built(name, spec, hf_model, tokenizer, seed)
    weights_dtype = DTYPES.get(spec.weights_dtype)
    built.module.eval().to(device=device, dtype=weights_dtype)
    if built.causal_lm is not None:
        built.causal_lm.eval().to(device=device, dtype=weights_dtype)
    built.inputs = tuple(_to(t, device, weights_dtype) for t in built.inputs)
    if spec.labels:
        built.labels = Path(spec.labels).read_text().splitlines()
    built.memory_estimate = estimate
    return built


def inputs_at(built: BuiltModel, name: str, spec: ModelSpec, seed: int, device: str) -> tuple[torch.Tensor, ...]:
    """The built model's inputs at another shape: `spec` with another batch_size, seq_len or image_size."""
    if spec.source == "torchvision":
        inputs = (_image_input(name, spec, spec.image_size, seed),)
    elif spec.task == "image-classification":
        inputs = (_image_input(name, spec, _image_side(built.module.model, spec), seed),)
    else:
        inputs = (_token_ids(name, spec, built.module.model.config, None, seed),)
    return tuple(_to(t, device, DTYPES.get(spec.weights_dtype)) for t in inputs)


GIB = 2**30


def check_fits(name: str, spec: ModelSpec, device: str) -> dict:
    """Refuse, before allocating anything, a model whose weights, or whose weights and the tensors of one forward
    pass at its batch size and input shape (a stream's: at its largest value), need more memory than the device
    has. Returns what the guard knew: the activation estimate, or why there is none."""
    if spec.stream is not None:
        spec = spec.replace(**{spec.stream.axis: spec.stream.largest})
    needed, available = estimated_parameter_bytes(name, spec), device_total_bytes(device)
    if available is not None and needed > available:
        raise ModelError(
            f"Config key `models.{name}`: its parameters alone need about {needed / GIB:.0f} GiB "
            f"({spec.weights_dtype or 'float32'}), but the device ({device}) has {available / GIB:.0f} GiB: "
            "expected a smaller config, a reduced-precision weights_dtype, or hardware with more memory."
        )
    activations, unavailable = activation_estimate(name, spec)
    if available is not None and activations is not None and needed + activations > available:
        shape = f"{spec.stream.axis} {spec.stream.largest}" if spec.stream else f"batch_size {spec.batch_size}"
        raise ModelError(
            f"Config key `models.{name}`: one forward pass at {shape} needs about "
            f"{activations / GIB:.1f} GiB of tensors alive at once besides {needed / GIB:.1f} GiB of weights "
            f"(counted on the meta device, which allocates nothing), but the device ({device}) has "
            f"{available / GIB:.0f} GiB: expected a smaller batch_size (or sweep point, or stream value), image_size "
            "or seq_len, or hardware with more memory."
        )
    return {"estimated_activation_bytes": activations, "estimate_unavailable": unavailable}


def estimated_parameter_bytes(name: str, spec: ModelSpec) -> int:
    """The weights' bytes, known without allocating them: the checkpoint's size on disk, or for random weights
    the parameters of a build on the meta device (which costs no memory) in the dtype they will be cast to."""
    if spec.weights != "random":
        path = Path(spec.weights)
        files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file() and not f.is_symlink()]
        return sum(f.stat().st_size for f in files)
    return int(parameter_bytes(_meta_model(name, spec)) * _dtype_scale(spec))


def estimated_activation_bytes(name: str, spec: ModelSpec, bytes_per_element: int | None = None) -> int | None:
    """The most bytes of tensors alive at once in one eager forward pass at the configured batch size and input
    shape, inputs included and weights not, counted on the meta device, in the weights' dtype or at
    `bytes_per_element`; None where it cannot be counted (`activation_estimate` says why)."""
    return activation_estimate(name, spec, bytes_per_element)[0]


def activation_estimate(
    name: str, spec: ModelSpec, bytes_per_element: int | None = None
) -> tuple[int | None, str | None]:
    """`estimated_activation_bytes`, and why there is none: the architecture cannot be built on the meta device
    without loading its weights (a checkpoint of transformers), or cannot run there."""
    if spec.weights != "random" and spec.source != "torchvision":
        return None, "a transformers checkpoint is not built without loading its weights"
    try:
        model = _meta_model(name, spec)
        with torch.device("meta"):
            module, inputs = _meta_forward(model, spec)
            with torch.no_grad(), PeakLiveBytes(*inputs) as counted:
                module(*inputs)
    except Exception as exc:  # an estimate only: the job itself then finds out
        reason = f"{type(exc).__name__}: {exc}"
        log.warning("no activation estimate for `models.%s` on the meta device: %s", name, reason)
        return None, reason
    scale = bytes_per_element / 4 if bytes_per_element else _dtype_scale(spec)  # counted in float32
    return int(counted.peak * scale), None


def _meta_model(name: str, spec: ModelSpec) -> nn.Module:
    """The model's architecture on the meta device (no memory), without its weights, in eval mode as it runs."""
    with torch.device("meta"):
        if spec.source == "torchvision":
            return _torchvision_model(name, spec.replace(weights="random")).eval()
        return _transformers_model(name, spec)[0].eval()


def architecture(name: str, spec: ModelSpec) -> nn.Module | None:
    """The model's modules on the meta device, its weights not read: a checkpoint's from its config alone; None
    for pretrained weights not downloaded yet."""
    if spec.weights == "random" or spec.source == "torchvision":
        return _meta_model(name, spec)
    import transformers

    if not Path(spec.weights).exists():
        return None
    auto = getattr(transformers, _TRANSFORMERS_AUTO[spec.task])
    with torch.device("meta"):
        return auto.from_config(transformers.AutoConfig.from_pretrained(spec.weights)).eval()


def _meta_forward(model: nn.Module, spec: ModelSpec) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """What one forward pass calls, with inputs of the configured shapes (call inside a meta device context)."""
    batch = spec.batch_size
    if spec.source == "torchvision":
        size = spec.image_size
        return model, (torch.empty(batch, 3, size, size),)
    if spec.task == "image-classification":
        size = _image_side(model, spec)
        return LogitsOnly(model, "pixel_values"), (torch.empty(batch, 3, size, size),)
    ids = torch.zeros(batch, spec.seq_len, dtype=torch.long)
    return LogitsOnly(model, "input_ids"), (ids,)


def _image_side(model: nn.Module, spec: ModelSpec) -> int:
    """A transformers vision model's input side: its own config's, which `image_size` cannot override."""
    return getattr(model.config, "image_size", spec.image_size)


def _dtype_scale(spec: ModelSpec) -> float:
    """Bytes in the weights' dtype per float32 byte."""
    dtype = DTYPES.get(spec.weights_dtype)
    return torch.finfo(dtype).bits / 32 if dtype is not None else 1.0


def _to(tensor: torch.Tensor, device: str, dtype: torch.dtype | None) -> torch.Tensor:
    """Inputs go to the device; float inputs take the weights' dtype when one is set (token ids stay integers)."""
    if dtype is not None and tensor.is_floating_point():
        return tensor.to(device=device, dtype=dtype)
    return tensor.to(device)


def parameter_bytes(module: nn.Module, bytes_per_element: int | None = None) -> int:
    """Bytes of the weights one forward pass reads (parameters and buffers), as stored or at `bytes_per_element`."""
    tensors = list(module.parameters()) + list(module.buffers())
    return sum(t.numel() * (bytes_per_element or t.element_size()) for t in {id(t): t for t in tensors}.values())


def _torchvision_model(name: str, spec: ModelSpec) -> nn.Module:
    import torchvision

    arch, weights = spec.arch, spec.weights
    if arch not in torchvision.models.list_models(module=torchvision.models):
        raise ModelError(
            f"Config key `models.{name}.arch` is {arch!r}, which torchvision cannot build: expected a "
            "classification model name such as resnet18, resnet50, resnet152 or vit_b_16."
        )
    if weights == "random":
        return torchvision.models.get_model(arch, weights=None, **(spec.config or {}))
    if weights == "pretrained":
        torch.hub.set_dir(str(WEIGHTS_DIR / "torchvision"))
        return torchvision.models.get_model(arch, weights="DEFAULT")
    model = torchvision.models.get_model(arch, weights=None, **(spec.config or {}))
    path = Path(weights)
    model.load_state_dict(_tensors_only(path / "state_dict.pt" if path.is_dir() else path, name))
    log.info("loaded %s weights from %s", arch, weights)
    return model


def _tensors_only(path: Path, name: str) -> dict:
    """A state dict loaded as data: a checkpoint whose pickle would build other objects (and so run code) is refused."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise ModelError(
            f"Config key `models.{name}.weights` names {path}, which was refused: loading it would run code (its "
            "pickle holds objects other than tensors), and compilebench loads weights as data only. Expected a "
            "state dict of tensors, as torch.save(model.state_dict(), PATH) writes one."
        ) from None


def _transformers_model(name: str, spec: ModelSpec):
    import transformers

    auto = getattr(transformers, _TRANSFORMERS_AUTO[spec.task])
    weights = spec.weights
    if weights == "random":
        try:
            config = transformers.AutoConfig.for_model(spec.arch, **(spec.config or {}))
        except ValueError as exc:
            raise ModelError(
                f"Config key `models.{name}.arch` is {spec.arch!r}, which transformers does not "
                f"know as a model_type ({exc})."
            ) from None
        return auto.from_config(config), None
    source, kwargs = weights, {}
    if weights == "pretrained":
        source = spec.hub_id
        kwargs = {"revision": spec.revision, "cache_dir": str(WEIGHTS_DIR / "huggingface")}
    model = auto.from_pretrained(source, trust_remote_code=False, **kwargs)
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, trust_remote_code=False, **kwargs)
    except (OSError, ValueError):
        tokenizer = None
    log.info("loaded %s from %s", spec.arch, source)
    return model, tokenizer


def _transformers_built(name: str, spec: ModelSpec, model: nn.Module, tokenizer, seed: int) -> BuiltModel:
    task = spec.task
    if task == "image-classification":
        inputs = (_image_input(name, spec, _image_side(model, spec), seed),)
        return BuiltModel(name, task, LogitsOnly(model, "pixel_values"), inputs)
    ids = _token_ids(name, spec, model.config, tokenizer, seed)
    built = BuiltModel(name, task, LogitsOnly(model, "input_ids"), (ids,))
    if task == "text-generation":
        built.causal_lm = model
        built.extra["tokenizer"] = tokenizer
    return built


def _image_input(name: str, spec: ModelSpec, size: int, seed: int) -> torch.Tensor:
    batch = spec.batch_size
    if spec.image:
        image = load_image(name, spec.image, size)
        return image.unsqueeze(0).expand(batch, -1, -1, -1).contiguous()
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(batch, 3, size, size, generator=generator, device="cpu")


def load_image(name: str, path: str, size: int = 224) -> torch.Tensor:
    """The standard ImageNet preprocessing: resize 256, center crop 224, normalize."""
    from PIL import Image, UnidentifiedImageError
    from torchvision import transforms

    try:
        with Image.open(path) as image:
            rgb = image.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise ModelError(
            f"Config key `models.{name}.image` names {path!r}, which is not a readable image: {exc}"
        ) from None
    resize = round(size * 256 / 224)
    preprocess = transforms.Compose(
        [
            transforms.Resize(resize),
            transforms.CenterCrop(size),
            transforms.ToTensor(),
            transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
        ]
    )
    return preprocess(rgb)


def _token_ids(name: str, spec: ModelSpec, config, tokenizer, seed: int) -> torch.Tensor:
    batch = spec.batch_size
    context = getattr(config, "max_position_embeddings", None)
    if spec.prompt:
        if tokenizer is None:
            raise ModelError(
                f"Config key `models.{name}.prompt` needs a tokenizer, but the model's weights "
                f"({spec.weights}) come without one: use pretrained or saved weights, or drop the prompt."
            )
        ids = tokenizer(spec.prompt, return_tensors="pt")["input_ids"]
    else:
        generator = torch.Generator().manual_seed(seed)
        vocab = config.vocab_size
        low = min(5, vocab - 1)  # keep clear of special tokens at the start of small vocabularies
        ids = torch.randint(low, vocab, (1, spec.seq_len), generator=generator, device="cpu")
    needed = ids.shape[1] + (spec.new_tokens if spec.task == "text-generation" else 0)
    if context is not None and needed > context:
        raise ModelError(
            f"Config key `models.{name}`: the input needs {needed} positions (prompt or seq_len plus "
            f"new_tokens) but the model's context is {context}: expected a shorter input."
        )
    return ids.expand(batch, -1).contiguous()
