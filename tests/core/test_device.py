"""Where models run (device.py): TRANSFORMER_CORE_DEVICE is honoured, and a bad value is a DeviceError that
the commands report."""

import importlib
import os
import threading

from core_models import ASSETS
import pytest
import torch

import transformer_core as tc


@pytest.mark.parametrize("value, message", [("gpu", "is not a device"), ("cuda", "no CUDA GPU")])
def test_a_bad_device_env_var_is_a_device_error_and_the_commands_say_so(value, message, monkeypatch, tmp_path):
    if value == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    monkeypatch.setenv("TRANSFORMER_CORE_DEVICE", value)
    with pytest.raises(tc.DeviceError, match=message):
        tc.default_device()
    for command in ("train_lm", "train_sentiment"):
        main = importlib.import_module(f"transformer_core.training.{command}").main
        with pytest.raises(SystemExit, match=f"^error: TRANSFORMER_CORE_DEVICE='{value}'"):
            main(["--out", str(tmp_path / "out"), "--tokenizer", str(ASSETS / "sentiment" / "tokenizer.json")])
    assert not (tmp_path / "out").exists()
    from transformer_core.training import train_everyday
    with pytest.raises(SystemExit, match=f"^error: TRANSFORMER_CORE_DEVICE='{value}'"):
        train_everyday.main(["--out-dir", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_device_env_var_is_honoured(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_CORE_DEVICE", "cpu")
    assert tc.default_device().type == "cpu"


def test_work_on_two_cores_comes_back_in_order_under_the_callers_grad_mode_and_nests_in_place():
    from transformer_core.device import on_two_cores

    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        assert [y.requires_grad for y in on_two_cores(lambda k: x * k, range(4))] == [False] * 4
    outs = on_two_cores(lambda k: x * k, range(4))
    assert [float(y.detach().sum()) for y in outs] == [0.0, 3.0, 6.0, 9.0] and all(y.requires_grad for y in outs)
    # called from one of its own threads it runs there: two outer items each waiting on the pool would hang
    assert on_two_cores(lambda k: on_two_cores(lambda j: 10 * k + j, range(2)), range(2)) == [[0, 1], [10, 11]]


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="threads have priorities of their own on Linux only")
def test_work_on_two_cores_stays_in_a_thread_of_lowered_priority():
    """A real LLM's generation runs at a lower CPU priority: its halves must not run on the pair's threads, at the
    priority of the requests a lecture hall waits for."""
    from concurrent.futures import ThreadPoolExecutor

    from transformer_core.device import on_two_cores

    def where(_):
        return threading.current_thread().name

    def lowered():
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        return on_two_cores(where, range(2)), threading.current_thread().name

    assert all(name.startswith("cpu-pair") for name in on_two_cores(where, range(2)))
    with ThreadPoolExecutor(1, thread_name_prefix="lowered") as pool:
        names, own = pool.submit(lowered).result()
    assert names == [own, own]
