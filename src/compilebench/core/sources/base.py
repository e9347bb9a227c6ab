"""What a model source declares, and the registry every other module asks instead of branching on a source's name.

A source is one torch-free declaration here (`core/sources/NAME.py`: what `arch` names, which tasks it builds, how
its weights are given and checked) and one worker builder of the same name (`worker/sources/NAME.py`: the module and
its inputs). A source from outside the package registers itself from a plugin (`core.plugins`).
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import ClassVar

from ..errors import ConfigError
from ..plugins import Registry

TASKS = ("image-classification", "text-classification", "fill-mask", "text-generation")


class Source:
    """A model source's declaration."""

    name: ClassVar[str]
    description: ClassVar[str] = ""  # what `arch` names, for the configuration reference
    arch_words: ClassVar[str] = "architecture"  # what the library calls one `arch` ("model_type")
    # Python run in a child interpreter that binds `names` to what the library builds; None: not listed.
    listing: ClassVar[str | None] = None
    tasks: ClassVar[tuple[str, ...]] = TASKS
    # Its architecture is known without reading a checkpoint (an estimate or a regional compile's stack).
    arch_without_weights: ClassVar[bool] = True
    image_size_from_config: ClassVar[bool] = False  # a vision model takes its image side from its own config
    image_size_key: ClassVar[str] = "config.image_size"  # ... from this key of the model entry
    install: ClassVar[str | None] = None  # how to install the library it builds with, where it is an extra
    built_from_config: ClassVar[bool] = False  # random weights are built from `config` (its depth can be swept)
    pretrained_from_hub: ClassVar[bool] = False  # pretrained weights come from a hub: `hub_id` and `revision`
    # The input axes a config may sweep or mark dynamic; None: by task (a batch, and an image's side or a sequence).
    input_axes: ClassVar[tuple[str, ...] | None] = None
    # The model entry's keys of this source alone, as JSON schema properties (`models.NAME.<key>`).
    schema: ClassVar[dict[str, dict]] = {}
    # The worker module that builds it; None: `compilebench.worker.sources.<name>`.
    implementation: ClassVar[str | None] = None

    def complete(self, name: str, entry: dict) -> None:
        """Check what a schema cannot of the model entry `name` of this source, and fill in what follows from it
        (before sweeps and streams copy the entry)."""

    def check_weights(self, key: str, weights: str) -> None:
        """Refuse, naming `key`, a weights path that does not hold what the source loads: a state dict saved with
        torch.save, as a file or as state_dict.pt in a folder."""
        path = existing_weights(key, weights)
        file = path / "state_dict.pt" if path.is_dir() else path
        if not file.is_file():
            raise ConfigError(
                f"Config key `{key}` names the folder {weights!r}, which holds no state_dict.pt: expected a state dict "
                "saved with torch.save, as a file or as state_dict.pt in that folder."
            )
        if not is_torch_checkpoint(file):
            raise ConfigError(
                f"Config key `{key}` names {str(file)!r}, which is not a torch checkpoint (neither torch.save's zip "
                "format nor its legacy pickle): expected a state dict saved with torch.save."
            )


def existing_weights(key: str, weights: str) -> Path:
    path = Path(weights)
    if not path.exists():
        raise ConfigError(
            f"Config key `{key}` names {weights!r}, which does not exist: expected random, pretrained, or the path "
            "of a state dict file or a save_pretrained directory."
        )
    return path


def is_torch_checkpoint(path: Path) -> bool:
    """torch.save's zip archive (a `data.pkl` inside), or its legacy format (a pickle, protocol 2 or later)."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return any(name == "data.pkl" or name.endswith("/data.pkl") for name in archive.namelist())
    with open(path, "rb") as handle:
        return handle.read(1) == b"\x80"


REGISTRY: Registry[Source] = Registry("model source")
register, unregister, names, get = REGISTRY.register, REGISTRY.unregister, REGISTRY.names, REGISTRY.get
