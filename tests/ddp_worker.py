"""One rank of the distributed tests (tests/core/test_distributed.py starts it with torchrun on 127.0.0.1).

    python -m torch.distributed.run --nproc-per-node 2 tests/ddp_worker.py MODE OUT [ARGS...]

Modes: `copy STOP` trains a tiny translator and stops after STOP steps (rank<R>.pt), then trains it
again under a 30 s budget while rank 1's clock runs 100 s per reading (clock<R>.pt); `fail` has rank 1
raise at step 3; `lm ARGS` runs the train_lm command, counting checkpoint writes in saves.txt.
Each rank writes what it saw under OUT, and the threads it still runs after the run (threads<R>.txt).
"""

from __future__ import annotations

import itertools
import sys
import types
from pathlib import Path

import torch

from transformer_core import distributed
from transformer_core.training import loop as training
from transformer_core.training import train_lm, translation
from transformer_core.tasks import get_task

STEPS, BATCH = 8, 12  # 12 pairs: each of 2 ranks gets 6 pairs of varied lengths


class Stop(Exception):
    """Raised by on_step on every rank, as an interrupted run would stop."""


def copy_run(stop: int, resume: str | None = None, time_budget_s: float | None = None) -> dict:
    """Train the tiny copy translator (seed 0) with every step's loss recorded; stop after `stop` steps."""
    torch.manual_seed(0)
    task = get_task("copy")
    model, codec = translation.build_model(task, "tiny")
    losses = []

    def on_step(step, loss):
        losses.append((step, loss))
        if step + 1 == stop:
            raise Stop

    cfg = training.TrainConfig(steps=STEPS, lr=3e-3, warmup=2, eval_every=2, eval_batches=1,
                               time_budget_s=time_budget_s)
    history = None
    try:
        history = translation.fit(model, codec, task, cfg, BATCH, on_step=on_step, resume_path=resume, progress=False)
    except Stop:
        pass
    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    return {"losses": losses, "params": params, "history": history}


def main(mode: str, out: Path, *args: str) -> None:
    rank = distributed.world().rank
    seen = {}
    if mode == "copy":
        seen = copy_run(int(args[0]), resume=str(out / "resume.pt"))
        if rank == 1:  # this rank alone believes 100 s pass between two readings of its clock
            ticks = itertools.count(step=100.0)
            training.time = types.SimpleNamespace(perf_counter=lambda: float(next(ticks)))
        torch.save(copy_run(STEPS, time_budget_s=30), out / f"clock{rank}.pt")
    elif mode == "fail":
        if rank == 1:
            real_batches = translation.pair_batches

            def broken_batches(*a, **kw):
                get_batch = real_batches(*a, **kw)

                def get(split, g):
                    if split == "train" and g.initial_seed() == 2:  # the generator of step 2 (seed 0)
                        raise RuntimeError("rank 1 failed on purpose at step 3")
                    return get_batch(split, g)

                return get

            translation.pair_batches = broken_batches
        seen = copy_run(STEPS)
    elif mode == "lm":
        real_save = train_lm.save_checkpoint

        def save(*a, **kw):
            with open(out / "saves.txt", "a") as f:
                f.write(f"{rank}\n")
            return real_save(*a, **kw)

        train_lm.save_checkpoint = save
        train_lm.main(list(args))
    torch.save(seen, out / f"rank{rank}.pt")


def threads() -> list[str]:
    """The names of this process's threads, C++ ones included (gloo's are pt_gloo_runloop and gloo_tcp_loop)."""
    tasks = Path("/proc/self/task")
    return sorted((task / "comm").read_text().strip() for task in tasks.iterdir())


if __name__ == "__main__":
    distributed.run(lambda: main(sys.argv[1], Path(sys.argv[2]), *sys.argv[3:]))
    # what is left once the process group is destroyed: a gloo thread still running races interpreter shutdown
    (Path(sys.argv[2]) / f"threads{distributed.world().rank}.txt").write_text("\n".join(threads()))
