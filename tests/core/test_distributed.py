"""Training under torchrun: 2 gloo processes on 127.0.0.1 against 1 process (tests/ddp_worker.py is one rank)."""

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import ddp_worker  # the ranks' own code, run here as the one-process reference
import pytest
import serving
import torch

import transformer_core as tc
from transformer_core import distributed
from transformer_core.device import World, describe, local, world

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "assets"
LOSS_TOLERANCE = 1e-5  # float32 sums in another order; weighting ranks by rows instead of target tokens is off by 3e-3


def torchrun(mode: str, out: Path, *args: str, timeout: float = 90,
             monitor_s: float = 0.1) -> subprocess.CompletedProcess:
    """Run the worker on 2 CPU processes; a hang fails the test at `timeout` instead of blocking CI.

    torchrun looks at its ranks every `monitor_s` (its default, 0.1 s).
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo",
           "TRANSFORMER_CORE_DEVICE": "cpu"}  # gloo on CPU whatever the machine
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
               "--master-port", str(serving.free_port()), "--monitor-interval", str(monitor_s),
               str(ROOT / "tests" / "ddp_worker.py"), mode, str(out), *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT) as run:
        try:
            stdout, stderr = run.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            run.terminate()  # torchrun passes SIGTERM on and stops both ranks (a SIGKILL would orphan them)
            run.communicate(timeout=60)
            raise
    return subprocess.CompletedProcess(command, run.returncode, stdout, stderr)


def ranks(out: Path, name: str = "rank") -> list[dict]:
    return [torch.load(out / f"{name}{r}.pt", weights_only=False) for r in (0, 1)]


@pytest.fixture(scope="module")
def stopped_at_5(tmp_path_factory):
    """The tiny translator trained by 2 processes for 5 of 8 steps (the resume file saved at step 4);
    then again with rank 1 alone believing the 30 s budget spent after one step."""
    out = tmp_path_factory.mktemp("copy")
    result = torchrun("copy", out, "5")
    assert result.returncode == 0, result.stderr[-3000:]
    return out, ranks(out)


@pytest.fixture(scope="module")
def one_process():
    """The same training in this one process, unbroken."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as each rank runs
    try:
        seen = ddp_worker.copy_run(ddp_worker.STEPS + 1)
    finally:
        torch.set_num_threads(threads)
    assert not torch.distributed.is_initialized()  # without torchrun the loop never touches torch.distributed
    return seen


def test_two_processes_give_the_losses_of_one_process_with_the_same_global_batch(stopped_at_5, one_process):
    _, (rank0, rank1) = stopped_at_5
    two = [loss for _, loss in rank0["losses"]]
    one = [loss for _, loss in one_process["losses"][:5]]
    assert len(two) == 5 and max(abs(a - b) for a, b in zip(two, one)) < LOSS_TOLERANCE
    assert rank1["losses"] == rank0["losses"]  # every rank sees the loss of the whole batch


def test_both_ranks_hold_identical_parameters(stopped_at_5):
    _, (rank0, rank1) = stopped_at_5
    assert torch.equal(rank0["params"], rank1["params"])


def test_a_run_of_2_processes_resumes_in_1_where_it_stopped(stopped_at_5, one_process):
    out, _ = stopped_at_5
    resumed = ddp_worker.copy_run(ddp_worker.STEPS + 1, resume=str(out / "resume.pt"))
    assert [step for step, _ in resumed["losses"]] == [4, 5, 6, 7]
    tail = [loss for _, loss in one_process["losses"][4:]]
    assert max(abs(a - b) for (_, a), b in zip(resumed["losses"], tail)) < LOSS_TOLERANCE


def test_a_finished_run_leaves_no_gloo_thread_to_race_interpreter_shutdown(stopped_at_5):
    """Left running, one of them sometimes frees a finished broadcast while Python shuts down: the rank aborts."""
    for rank in (0, 1):
        left = (stopped_at_5[0] / f"threads{rank}.txt").read_text().split()
        assert left and not [name for name in left if "gloo" in name], left


def test_ranks_agree_on_the_time_budget_when_their_clocks_disagree(stopped_at_5):
    rank0, rank1 = ranks(stopped_at_5[0], "clock")  # without agreeing, rank 0 would wait for rank 1 alone
    assert [step for step, _ in rank0["losses"]] == [step for step, _ in rank1["losses"]] == [0]
    assert rank0["history"] == rank1["history"] and rank0["history"][-1]["step"] == 1


def test_a_failing_rank_stops_the_run_with_its_message(tmp_path):
    # rank 1 raises at step 3 while rank 0 waits for its gradients. torchrun names the failure with the
    # earliest timestamp, in whole seconds; looking at the ranks only every 2 s, it finds both ended
    # within the same second unless rank 0 leaves the blame to rank 1 (as a loaded CI machine once showed)
    result = torchrun("fail", tmp_path, monitor_s=2)
    assert result.returncode != 0
    root_cause = result.stderr[result.stderr.index("Root Cause"):]
    assert "rank      : 1" in root_cause and "rank 1 failed on purpose at step 3" in root_cause
    assert not (tmp_path / "rank0.pt").exists()  # rank 0 did not carry on alone


def test_lm_command_under_torchrun_writes_one_checkpoint_like_one_process(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_CORE_DEVICE", "cpu")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"line {i}: to be or not to be, that is the question.\n" for i in range(300)))
    args = ["--tokenizer", str(ASSETS / "shakespeare-lm" / "tokenizer.json"), "--corpus", str(corpus),
            "--d-model", "16", "--n-layer", "1", "--n-head", "2", "--context", "16", "--batch-size", "4",
            "--steps", "6", "--eval-every", "3", "--dropout", "0"]
    result = torchrun("lm", tmp_path, "--out", str(tmp_path / "two"), *args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "saves.txt").read_text() == "0\n"  # rank 0 wrote the checkpoint, once
    assert result.stdout.count("train tokens") == 1  # and it alone printed
    card = (tmp_path / "two" / "README.md").read_text()
    assert "on 2 processes on 1 machine(s) (torchrun, DDP over gloo), each on 1 CPU thread(s)" in card

    importlib.import_module("transformer_core.training.train_lm").main(["--out", str(tmp_path / "one"), *args])
    two, one = (json.loads((tmp_path / name / "history.json").read_text()) for name in ("two", "one"))
    assert [row["step"] for row in two] == [row["step"] for row in one] == [3, 6]
    for a, b in zip(two, one):
        assert abs(a["train_loss"] - b["train_loss"]) < LOSS_TOLERANCE and abs(a["val_loss"] - b["val_loss"]) < LOSS_TOLERANCE
    model = tc.load_model(tmp_path / "two")
    assert model.config.max_len == 16 and torch.allclose(
        torch.cat([p.flatten() for p in model.parameters()]),
        torch.cat([p.flatten() for p in tc.load_model(tmp_path / "one").parameters()]), atol=1e-5)


def test_a_batch_splits_into_rows_per_rank_and_nothing_else_splits():
    batch = (torch.arange(10).view(5, 2), torch.arange(5))
    parts = [distributed.shard(batch, rank, 2) for rank in (0, 1)]
    assert [len(p[0]) for p in parts] == [3, 2]
    assert torch.equal(torch.cat([p[0] for p in parts]), batch[0]) and torch.equal(torch.cat([p[1] for p in parts]), batch[1])
    with pytest.raises(distributed.DistributedError, match="tuples or lists of tensors"):
        distributed.shard({"x": batch[0]}, 0, 2)
    with pytest.raises(distributed.DistributedError, match="batch size of at least 8"):
        distributed.shard(batch, 0, 8)


def test_one_process_is_the_whole_world(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert world() == World() and distributed.is_main()
    assert describe("cpu").endswith("CPU thread(s) of a shared machine")
    assert local(torch.device("cuda")) == torch.device("cuda")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert local(torch.device("cuda")) == torch.device("cuda", 1)  # each process on its own GPU
    assert world().machines == 2
