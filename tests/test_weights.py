"""Pretrained-weight code paths, exercised on tiny models the tests save themselves."""

from __future__ import annotations

import pytest
import torch
from helpers import ASSETS_MIRROR, measured, tiny_config, word_tokenizer

from compilebench.configuration import config as configuration
from compilebench.core.errors import UserError
from compilebench.core.experiment import ModelSpec
from compilebench.worker.models import build


def spec_of(raw: dict, model: str) -> ModelSpec:
    """A model entry of a raw config, as its experiments run it."""
    return configuration.experiment(configuration.validate(raw), model, "eager", "cpu", any_mode=True).spec


def test_torchvision_state_dict_by_path(tmp_path):
    import torchvision

    torch.manual_seed(123)
    saved = torchvision.models.resnet18(num_classes=10).eval()
    path = tmp_path / "resnet.pt"
    torch.save(saved.state_dict(), path)
    spec = spec_of(tiny_config({"r": {**tiny_config()["models"]["resnet"], "weights": str(path)}}), "r")
    bundle = build("r", spec, seed=0, device="cpu")
    with torch.no_grad():
        assert torch.equal(bundle.module(*bundle.inputs), saved(*bundle.inputs))


class Payload:
    def __reduce__(self):
        return (print, ("this ran while the weights loaded",))


def test_a_checkpoint_whose_pickle_would_run_code_is_refused_naming_the_file(tmp_path, capsys):
    path = tmp_path / "resnet.pt"
    torch.save({"conv1.weight": torch.zeros(1), "payload": Payload()}, path)
    spec = spec_of(tiny_config({"r": {**tiny_config()["models"]["resnet"], "weights": str(path)}}), "r")
    with pytest.raises(UserError) as refused:
        build("r", spec, seed=0, device="cpu")
    message = str(refused.value)
    assert str(path) in message and "would run code" in message and "`models.r.weights`" in message
    assert "weights_only" not in message and "this ran" not in capsys.readouterr().out


def test_transformers_save_pretrained_directory_with_prompt(tmp_path):
    from transformers import AutoConfig, AutoModelForSequenceClassification

    raw = tiny_config()["models"]["distilbert"]
    torch.manual_seed(7)
    model = AutoModelForSequenceClassification.from_config(AutoConfig.for_model("distilbert", **raw["config"])).eval()
    model.save_pretrained(tmp_path / "distil")
    word_tokenizer(raw["config"]["vocab_size"]).save_pretrained(tmp_path / "distil")
    entry = {**raw, "weights": str(tmp_path / "distil"), "prompt": "the dog is a samoyed"}
    config = configuration.validate(tiny_config({"d": entry}))
    bundle = build("d", configuration.experiment(config, "d", "eager", "cpu").spec, seed=0, device="cpu")
    assert bundle.inputs[0].tolist() == [[5, 6, 7, 8, 9]]
    with torch.no_grad():
        assert torch.allclose(bundle.module(*bundle.inputs), model(input_ids=bundle.inputs[0]).logits)
    result = measured(configuration.experiment(config, "d", "jit", "cpu"))
    assert result["status"] == "ok" and result["correctness"]["passed"]


@pytest.mark.skipif(not (ASSETS_MIRROR / "dog.jpg").exists(), reason="needs the shared asset mirror")
def test_image_file_goes_through_imagenet_preprocessing():
    entry = {
        **tiny_config()["models"]["resnet"],
        "image": str(ASSETS_MIRROR / "dog.jpg"),
        "image_size": 224,
        "batch_size": 2,
    }
    bundle = build("r", spec_of(tiny_config({"r": entry}), "r"), seed=0, device="cpu")
    image = bundle.inputs[0]
    assert image.shape == (2, 3, 224, 224)
    assert torch.equal(image[0], image[1])
    assert -2.2 < float(image.min()) < 0 < float(image.max()) < 2.7  # ImageNet-normalized


def test_prompt_longer_than_context_is_refused_when_the_model_is_built(tmp_path):
    from transformers import AutoConfig, AutoModelForCausalLM

    from compilebench.worker.models import ModelError

    raw = tiny_config()["models"]["llama"]
    AutoModelForCausalLM.from_config(AutoConfig.for_model("llama", **raw["config"])).save_pretrained(tmp_path / "llama")
    entry = {**raw, "weights": str(tmp_path / "llama"), "seq_len": 62, "new_tokens": 4}
    with pytest.raises(ModelError, match="context is 64"):
        build("l", spec_of(tiny_config({"l": entry}), "l"), seed=0, device="cpu")
