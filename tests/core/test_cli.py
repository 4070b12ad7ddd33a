"""The training commands' shared command line (training/cli.py): a bad config is an error message, not a
traceback."""

import importlib

from core_models import ASSETS
import pytest


@pytest.mark.parametrize("command, argv", [
    ("train_lm", ["--tokenizer", str(ASSETS / "shakespeare-lm"), "--d-model", "30", "--n-head", "4"]),
    ("train_translate", ["--task", "copy", "--dropout", "1.5"]),
    ("train_sentiment", ["--tokenizer", str(ASSETS / "sentiment"), "--pretrain-dropout", "-0.1"]),
])
def test_training_commands_report_a_bad_config_without_a_traceback(command, argv, tmp_path):
    main = importlib.import_module(f"transformer_core.training.{command}").main
    with pytest.raises(SystemExit, match=r"^error: (d_model=30 is not divisible|dropout must be)"):
        main(["--out", str(tmp_path / "out"), *argv])
    assert not (tmp_path / "out").exists()
