"""Checkpoints (weights/hub.py): exact round trips, and every broken or missing file named in the error."""

import json
import re
from pathlib import Path

from core_models import classifier, encdec, lm
import pytest
import torch

import transformer_core as tc


@pytest.mark.parametrize("make", [lm, classifier, encdec])
def test_save_load_round_trip_reproduces_logits_exactly(tmp_path, make):
    model = make(positions="sinusoidal") if make is encdec else make()
    tc.save_checkpoint(model, tmp_path)
    loaded = tc.load_model(tmp_path)
    assert type(loaded) is type(model) and loaded.config == model.config
    x = torch.randint(0, 25, (2, 6))
    out = (model(x, x), loaded(x, x)) if make is encdec else (model(x), loaded(x))
    assert torch.equal(*out)


def test_corrupted_weights_raise_a_clear_error(tmp_path):
    tc.save_checkpoint(lm(), tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(tc.CheckpointError, match="could not load DecoderLM"):
        tc.load_model(tmp_path)


def test_mismatched_config_names_the_problem(tmp_path):
    tc.save_checkpoint(lm(), tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["d_model"] = 64
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(tc.CheckpointError, match="size mismatch|shape"):
        tc.load_model(tmp_path)


def test_missing_files_name_the_path(tmp_path):
    with pytest.raises(tc.CheckpointError, match="config.json"):
        tc.load_model(tmp_path)
    with pytest.raises(tc.CheckpointError, match="no checkpoint folder"):
        tc.load_model(tmp_path / "absent")


LOCAL_LOOKING = ["assets/sentiment", "sentiment", "./assets/sentiment", "../assets/sentiment", "~/no/such/folder"]


def test_a_path_that_looks_local_never_goes_to_the_hub_and_the_error_names_it(tmp_path, monkeypatch):
    from transformer_core.weights import hub

    monkeypatch.chdir(tmp_path)  # "assets/sentiment" asked for from another working directory
    asked = []
    monkeypatch.setattr(hub, "snapshot_download", lambda repo_id, **kwargs: asked.append(repo_id))
    monkeypatch.setattr("huggingface_hub.hf_hub_download", lambda repo_id, *args, **kwargs: asked.append(repo_id))
    for name in [*LOCAL_LOOKING, str(tmp_path / "assets" / "sentiment"), Path("assets/sentiment")]:
        looked_in = str(Path(name).expanduser().absolute())
        with pytest.raises(tc.CheckpointError) as error:
            tc.load_model(name)
        assert looked_in in str(error.value) and "hf://" in str(error.value)
        with pytest.raises(tc.GPT2ImportError, match=re.escape(looked_in)):
            tc.load_gpt2(name)
    assert asked == []


def test_a_hub_repo_is_asked_for_as_hf_namespace_name(tmp_path, monkeypatch):
    from transformer_core.weights import hub

    tc.save_checkpoint(lm(), tmp_path / "download")
    asked = []
    monkeypatch.setattr(hub, "snapshot_download",
                        lambda repo_id, **kwargs: asked.append(repo_id) or str(tmp_path / "download"))
    assert isinstance(tc.load_model("hf://someone/lm"), tc.DecoderLM) and asked == ["someone/lm"]


def test_unknown_arch_is_refused(tmp_path):
    tc.save_checkpoint(lm(), tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"arch": "Banana"}))
    with pytest.raises(tc.CheckpointError, match="arch"):
        tc.load_model(tmp_path)
