import json

import pytest
from helpers import ROOT, TINY_MODELS, tiny_config

from compilebench.configuration import config as configuration
from compilebench.configuration import schema, yaml_files
from compilebench.configuration.config import ConfigError


def test_defaults_filled_and_cpu_always_present():
    config = configuration.validate({"models": {"m": {"source": "torchvision", "arch": "resnet18"}}})
    model = config["models"]["m"]
    assert model["weights"] == "random" and model["task"] == "image-classification" and model["dtype"] == "float32"
    assert config["hardware"] == {
        "cpu": {"device": "cpu", "optional": False, "exclusive": True, "env": {}, "resources": {}}
    }
    assert (
        configuration.hardware_entry(configuration.validate(tiny_config(hardware={"g": {"device": "cuda"}})), "cpu")[
            "device"
        ]
        == "cpu"
    )
    assert config["modes"][0] == "eager"
    assert configuration.measure_settings(config, "m")["iterations"] == schema.MEASURE_DEFAULTS["iterations"]


def test_model_measure_overrides_global():
    raw = tiny_config()
    raw["measure"]["iterations"] = 7
    raw["models"]["resnet"]["measure"] = {"iterations": 3}
    config = configuration.validate(raw)
    assert configuration.measure_settings(config, "resnet")["iterations"] == 3
    assert configuration.measure_settings(config, "vit")["iterations"] == 7


def test_experiment_holds_only_its_own_settings():
    config = configuration.validate(tiny_config())
    exp = configuration.experiment(config, "resnet", "jit", "cpu")
    assert exp.spec.arch == "resnet18" and exp.mode == "jit"
    assert "vit" not in str(exp.to_json())


@pytest.mark.parametrize(
    "mutate, key",
    [
        (lambda c: c.update(colour="red"), "`colour`"),
        (lambda c: c["measure"].update(iterations=-1), "measure.iterations"),
        (lambda c: c["measure"].update(warmup="ten"), "measure.warmup"),
        (lambda c: c.update(modes=["eager", "turbo"]), "modes.1"),
        (lambda c: c["models"]["resnet"].update(source="onnx"), "models.resnet.source"),
        (lambda c: c["models"]["resnet"].update(task="speech"), "models.resnet.task"),
        (lambda c: c["models"]["resnet"].update(batch_size=0), "models.resnet.batch_size"),
        (lambda c: c["models"].update({"../escape": {"source": "torchvision", "arch": "resnet18"}}), "'../escape'"),
        (lambda c: c["hardware"].update(tpu={"device": "tpu"}), "hardware.tpu.device"),
        (lambda c: c["models"]["resnet"].update(weights="/no/such/weights.pt"), "models.resnet.weights"),
        (lambda c: c.update(models={}), "models"),
    ],
)
def test_bad_config_names_the_key(mutate, key):
    raw = tiny_config()
    mutate(raw)
    with pytest.raises(ConfigError) as error:
        configuration.validate(raw)
    message = str(error.value)
    assert key in message
    assert "\n" not in message and "Traceback" not in message


def test_pretrained_transformers_needs_pinned_revision():
    raw = tiny_config()
    raw["models"]["vit"].update(weights="pretrained", hub_id="google/vit-base-patch16-224")
    with pytest.raises(ConfigError, match="models.vit.revision"):
        configuration.validate(raw)


def test_load_reports_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        configuration.load(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        configuration.load(bad)


def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("modes: [eager]\nmeasure:\n  warmup: 3\n  iterations: 5\n  warmup: 10\n")
    with pytest.raises(
        ConfigError, match=r"twice.yaml is not valid YAML at line 5.*`warmup` is given twice, at lines 3 and 5"
    ):
        yaml_files.read_yaml(path)


def test_shipped_default_config_is_valid():
    config = configuration.load(ROOT / "config" / "config.yaml")
    assert set(config["models"]) == {"resnet18", "vit-tiny.bs1", "vit-tiny.bs8", "llama-tiny", "llama-tiny.train"}
    assert "compile-freezing" in schema.model_modes(config, "resnet18")
    assert schema.model_modes(config, "llama-tiny.train") == ["compile-default"]  # eager's step is timed beside it


def test_an_image_that_is_not_an_image_is_refused_before_anything_runs(tmp_path):
    fake = tmp_path / "dog.jpg"
    fake.write_text("not a jpeg")
    raw = tiny_config()
    raw["models"]["resnet"]["image"] = str(fake)
    with pytest.raises(ConfigError, match=r"`models.resnet.image`.*not a readable image"):
        configuration.validate(raw)


def test_synthetic_prompt_longer_than_the_context_is_refused():
    raw = tiny_config()
    raw["models"]["llama"].update(seq_len=62, new_tokens=4)
    with pytest.raises(ConfigError, match=r"models.llama.seq_len.*max_position_embeddings` is 64"):
        configuration.validate(raw)


def test_a_sweep_expands_into_one_named_experiment_per_point():
    swept = {**TINY_MODELS["resnet"], "sweep": {"dtype": ["float32", "bfloat16"], "batch_size": [1, 8]}}
    config = configuration.validate(tiny_config({"resnet": swept, "vit": TINY_MODELS["vit"]}))
    assert list(config["models"]) == ["resnet.bs1.fp32", "resnet.bs1.bf16", "resnet.bs8.fp32", "resnet.bs8.bf16", "vit"]
    exp = configuration.experiment(config, "resnet.bs8.bf16", "eager", "cpu")
    assert (exp.spec.batch_size, exp.spec.dtype) == (8, "bfloat16")
    assert exp.spec.swept == {"batch_size": 8, "dtype": "bfloat16"} and exp.spec.sweep_of == "resnet"
    assert configuration.validate(config)["models"] == config["models"]  # validating again changes nothing


def test_adding_a_sweep_value_leaves_the_other_points_as_they_were():
    def experiments(batches):
        swept = {**TINY_MODELS["resnet"], "sweep": {"batch_size": batches}}
        config = configuration.validate(tiny_config({"resnet": swept}))
        return {m: configuration.experiment(config, m, "compile-default", "cpu") for m in config["models"]}

    before, after = experiments([1, 8]), experiments([1, 8, 32])
    assert set(after) - set(before) == {"resnet.bs32"}
    assert all(after[m] == before[m] for m in before)


def test_sweep_points_share_their_models_pretrained_weights():
    swept = {**TINY_MODELS["resnet"], "weights": "pretrained", "sweep": {"image_size": [32, 64]}}
    config = configuration.validate(tiny_config({"resnet": swept}))
    assert {configuration.weights_name(config, m) for m in config["models"]} == {"resnet"}
    exp = configuration.experiment(config, "resnet.img64", "eager", "cpu")
    assert exp.spec.weights == "resources/weights/resnet" and exp.spec.image_size == 64


def test_a_sweep_point_that_collides_with_a_model_name_is_refused():
    models = {"resnet": {**TINY_MODELS["resnet"], "sweep": {"batch_size": [2]}}, "resnet.bs2": TINY_MODELS["resnet"]}
    with pytest.raises(ConfigError, match=r"`models.resnet.sweep`.*'resnet.bs2'"):
        configuration.validate(tiny_config(models))


def _folder_without_checkpoint(tmp_path):
    (tmp_path / "empty").mkdir()
    return str(tmp_path / "empty")


def _file_that_is_not_a_checkpoint(tmp_path):
    (tmp_path / "notes.pt").write_text("these are not weights")
    return str(tmp_path / "notes.pt")


# Each bad value the hardening issue lists that validation can see, with the key its message must name.
BAD_VALUES = {
    "unknown torchvision arch": (lambda c, t: c["models"]["resnet"].update(arch="resnet9000"), "models.resnet.arch"),
    "unknown model_type": (lambda c, t: c["models"]["vit"].update(arch="notamodel"), "models.vit.arch"),
    "weights folder without checkpoint": (
        lambda c, t: c["models"]["resnet"].update(weights=_folder_without_checkpoint(t)),
        "models.resnet.weights",
    ),
    "weights file not a checkpoint": (
        lambda c, t: c["models"]["resnet"].update(weights=_file_that_is_not_a_checkpoint(t)),
        "models.resnet.weights",
    ),
    "transformers weights not a save_pretrained folder": (
        lambda c, t: c["models"]["vit"].update(weights=_folder_without_checkpoint(t)),
        "models.vit.weights",
    ),
    "model mode outside the global list": (
        lambda c, t: c["models"]["resnet"].update(modes=["eager", "jit"]) or c.update(modes=["eager"]),
        "models.resnet.modes.1",
    ),
    "no hardware": (lambda c, t: c.update(hardware={}), "`hardware`"),
    "NaN timeout": (lambda c, t: c["measure"].update(timeout_s=float("nan")), "measure.timeout_s"),
    "infinite model setting": (lambda c, t: c["models"]["resnet"].update(image_size=float("inf")), "image_size"),
    "infinite price": (
        lambda c, t: c["hardware"]["cpu"].update(price_per_hour=float("inf")),
        "hardware.cpu.price_per_hour",
    ),
    "iterations above max_iterations": (
        lambda c, t: c["measure"].update(iterations=50, max_iterations=10),
        "measure.iterations",
    ),
    "a model's iterations above max_iterations": (
        lambda c, t: c["models"]["vit"].update(measure={"iterations": 2000}),
        "models.vit.measure.iterations",
    ),
    "unknown baseline hardware": (
        lambda c, t: c.update(report={"baseline_hardware": "graviton9"}),
        "report.baseline_hardware",
    ),
    # YAML reads 2.0 as a float, and JSON Schema alone would take it for an integer.
    "float swept batch size": (
        lambda c, t: c["models"]["resnet"].update(sweep={"batch_size": [2.0]}),
        "models.resnet.sweep.batch_size.0",
    ),
    "float image size": (lambda c, t: c["models"]["resnet"].update(image_size=32.0), "models.resnet.image_size"),
    "float batch size": (lambda c, t: c["models"]["vit"].update(batch_size=2.0), "models.vit.batch_size"),
    "float threads": (lambda c, t: c["hardware"]["cpu"].update(threads=2.0), "hardware.cpu.threads"),
    "seed beyond what torch takes": (lambda c, t: c.update(seed=2**70), "`seed`"),
    "seq_len sweep on an image model": (
        lambda c, t: c["models"]["resnet"].update(sweep={"seq_len": [8, 16]}),
        "models.resnet.sweep.seq_len",
    ),
    "image_size sweep on a transformers vision model": (
        lambda c, t: c["models"]["vit"].update(sweep={"image_size": [32, 64]}),
        "models.vit.sweep.image_size",
    ),
    "new_tokens sweep on a classifier": (
        lambda c, t: c["models"]["resnet"].update(sweep={"new_tokens": [4, 8]}),
        "models.resnet.sweep.new_tokens",
    ),
    "a timed phase longer than a process may run": (
        lambda c, t: c["measure"].update(min_time_s=1e9),
        "measure.min_time_s",
    ),
    "a model's steady state longer than its process may run": (
        lambda c, t: c["models"]["vit"].update(measure={"steady_state_s": 1e9}),
        "models.vit.measure.steady_state_s",
    ),
    "an interleave block longer than a process may run": (
        lambda c, t: c["measure"].update(interleave_block=None, interleave_block_s=1e9),
        "measure.interleave_block_s",
    ),
    "min_blocks blocks that cannot fit the timeout": (
        lambda c, t: c["measure"].update(interleave_block=None, interleave_block_s=1.0, min_blocks=400, timeout_s=600),
        "measure.min_blocks",
    ),
    "a stream whose calls cannot fit the timeout": (
        lambda c, t: c["models"]["vit"].update(stream={"batch_size": [1, 2], "repeat": 1_000_000_000}),
        "models.vit.stream",
    ),
    "a stream and a sweep on one model": (
        lambda c, t: c["models"]["vit"].update(stream={"batch_size": [1, 2]}, sweep={"batch_size": [1, 2]}),
        "models.vit.stream",
    ),
    "mark_dynamic on an axis the model's input lacks": (
        lambda c, t: c.update(
            mode_definitions={"dyn": {"kind": "compile", "compile": {"dynamic": None, "mark_dynamic": ["seq_len"]}}},
            modes=[*c["modes"], "dyn"],
        ),
        "mode_definitions.dyn.compile.mark_dynamic",
    ),
    # Snakemake refuses a wildcard that ends in a substring repeated 20 times; 64 characters pass the name rule.
    "periodic mode name": (
        lambda c, t: c.update(
            mode_definitions={"a" * 64: {"kind": "compile", "compile": {"mode": "default"}}}, modes=["eager", "a" * 64]
        ),
        "mode_definitions." + "a" * 64,
    ),
    "periodic model name": (
        lambda c, t: c["models"].update({"ab" * 20: c["models"].pop("vit")}),
        "models." + "ab" * 20,
    ),
}


@pytest.mark.parametrize("mutate, key", BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_bad_values_are_refused_before_any_job_with_the_key_named(mutate, key, tmp_path):
    raw = tiny_config()
    mutate(raw, tmp_path)
    with pytest.raises(ConfigError) as error:
        configuration.validate(raw)
    message = str(error.value)
    assert key in message and "expected" in message, message
    assert "\n" not in message and len(message) < 600, message


def test_a_close_architecture_name_is_suggested():
    raw = tiny_config()
    raw["models"]["vit"]["arch"] = "lama"
    with pytest.raises(ConfigError, match="did you mean llama"):
        configuration.validate(raw)


def test_architecture_names_are_kept_per_library_version_and_a_damaged_cache_is_rebuilt(tmp_path, monkeypatch):
    """A snakemake invocation lists torchvision's and transformers' names from the user's cache, not by importing
    them (seconds each time); the cache is named by the installed version, so an upgrade lists again."""
    import importlib.metadata

    from compilebench.configuration import catalog

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    catalog.known_architectures.cache_clear()
    version = importlib.metadata.version("torchvision")
    names = catalog.known_architectures("torchvision")
    cached = tmp_path / "compilebench" / f"architectures-torchvision-{version}.json"
    assert "resnet18" in names and set(json.loads(cached.read_text())) == names
    cached.write_text('["resnet18", "only_in_the_cache"]')
    catalog.known_architectures.cache_clear()
    assert catalog.known_architectures("torchvision") == {"resnet18", "only_in_the_cache"}  # read, not imported
    cached.write_text("[half a list")
    catalog.known_architectures.cache_clear()
    assert catalog.known_architectures("torchvision") == names
    catalog.known_architectures.cache_clear()


def test_real_checkpoints_pass_the_weights_check(tmp_path):
    import torch

    torch.save({"w": torch.zeros(2)}, tmp_path / "state.pt")
    (tmp_path / "folder").mkdir()
    torch.save({"w": torch.zeros(2)}, tmp_path / "folder" / "state_dict.pt")
    for weights in (tmp_path / "state.pt", tmp_path / "folder"):
        raw = tiny_config()
        raw["models"]["resnet"]["weights"] = str(weights)
        configuration.validate(raw)


def test_a_non_optional_gpu_entry_without_a_gpu_is_refused_before_any_job():
    config = configuration.validate(tiny_config(hardware={"cpu": {"device": "cpu"}, "h100": {"device": "cuda"}}))
    with pytest.raises(ConfigError, match=r"`hardware.h100.device`.*optional: true"):
        configuration.check_devices_here(config, lambda: False)
    configuration.check_devices_here(config, lambda: True)
    config["hardware"]["h100"]["optional"] = True
    configuration.check_devices_here(config, lambda: False)


def test_no_experiment_of_a_shipped_or_test_config_changes_its_fingerprint():
    """Upgrading compilebench must not measure again what an earlier version measured: every experiment's
    fingerprint (and every reference's) is the one recorded in tests/golden_digests.json."""
    import json

    from golden import GOLDEN, digests

    recorded, now = json.loads(GOLDEN.read_text()), digests()
    assert set(now) == set(recorded)
    assert {name for name in now if now[name] != recorded[name]} == set()


def test_the_configuration_reference_is_the_schema_written_out_and_describes_every_key():
    from compilebench.configuration import reference

    written = reference.markdown()
    assert (ROOT / "docs" / "configuration.md").read_text() == written, (
        "docs/configuration.md is out of date: python -m compilebench.configuration.reference > docs/configuration.md"
    )
    rows = [line for line in written.splitlines() if line.startswith("| `")]
    keys = {row.split(" | ")[0][2:] for row in rows}
    assert {"`measure.processes`", "`hardware.NAME.env`", "`models.NAME.stream`"} <= keys
    assert [row for row in rows if row.endswith("|  |")] == []  # every key says what it means


def test_a_history_key_naming_a_folder_or_another_file_fails_at_check(tmp_path):
    for store, said in ((tmp_path, "is a folder"), (tmp_path / "notes.txt", "is not an SQLite file")):
        if store.suffix:
            store.write_text("not a database")
        with pytest.raises(ConfigError, match=f"Config key `history` is .*{said}"):
            configuration.validate(tiny_config(history=str(store)))
    assert configuration.validate(tiny_config(history=str(tmp_path / "new.sqlite")))["history"]  # made by the run


def test_a_prompt_on_an_image_model_is_refused_naming_the_key():
    raw = tiny_config({"resnet": {**TINY_MODELS["resnet"], "prompt": "a photo of a dog"}})
    said = "`models.resnet.prompt` is set, but a model with task image-classification reads no text"
    with pytest.raises(ConfigError, match=said):
        configuration.validate(raw)
