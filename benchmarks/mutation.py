"""Mutation testing of the numeric core: how many small, deliberate bugs do the tests catch?

    pip install -r benchmarks/requirements.txt        # mutmut
    nice -n 10 python -m benchmarks.mutation [--max-children 2] [--workdir DIR]

mutmut (3.x) rewrites every function of MODULES into mutants, each with one small change
(`<` into `<=`, a constant plus one, an argument dropped, `and` into `or`, ...), and runs
against each mutant the tests of TESTS that call that function, stopping at the first
failure. A mutant some test fails on is killed; one that every test passes survived: a bug
these tests would let through, unless the change does not alter behaviour at all (an
equivalent mutant, which no test can tell apart). A mutant in a function no selected test
calls ("no tests") counts as surviving, and a timeout (e.g. a loop that no longer ends)
as killed.

mutmut works in a copy of the repository (it writes a mutants/ folder there and reads its
settings from that copy's setup.cfg), so the working tree is left alone; a second run with
the same --workdir re-tests the mutants of the functions that changed, and every mutant that
survived before (against the tests as they are now). Prints every surviving mutant's diff, then on
its last line JSON {"killed", "survived", "score": killed / (killed + survived), ...}.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The numeric core: what is mutated. One place to edit when the modules move.
MODULES = (
    "transformer_core/model/layers.py",
    "transformer_core/model/masks.py",
    "transformer_core/model/trace.py",
    "transformer_core/decoding/sampling.py",
    "transformer_core/decoding/beam.py",
    "transformer_core/decoding/generation.py",
)
# A focused, fast selection: the tests of the numeric core, without the training commands and
# the comparisons with transformers (they call the same functions at many times the cost, and
# each mutant's test process would import transformers again).
TESTS = tuple(f"tests/core/test_{name}.py" for name in (
    "model_models", "model_attention", "masks", "layers", "trace", "kv_cache", "generation", "sampling", "hub", "device"))
DESELECT = "not command and not gpt2 and not transformers"
# what the tests import: tests/conftest.py clears lab's view caches (the ui handlers' among them) before each test
COPIED = ("transformer_core", "tests", "benchmarks", "lab")
# `mutmut results` statuses, and how the score counts them
KILLED = {"killed", "timeout", "segfault", "caught by type check"}
SURVIVED = {"survived", "no tests"}


def settings() -> str:
    """mutmut's configuration (setup.cfg in the working copy)."""
    lines = ["[mutmut]", "source_paths=transformer_core", "only_mutate=", *(f"    {m}" for m in MODULES),
             "also_copy=", *(f"    {name}" for name in COPIED if name not in ("transformer_core", "tests")),
             "pytest_add_cli_args_test_selection=", *(f"    {t}" for t in TESTS),
             "pytest_add_cli_args=", "    -p", "    no:cacheprovider", "    -k", f"    {DESELECT}",
             # torch is not fork-safe once it has run: fork each mutant from a clean server process
             "process_isolation=forkserver", "use_git_change_detection=false"]
    return "\n".join(lines) + "\n"


def prepare(workdir: Path) -> None:
    """Copy what the tests need into `workdir` (replacing an older copy) and write setup.cfg."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        shutil.rmtree(workdir / name, ignore_errors=True)
        shutil.copytree(ROOT / name, workdir / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (workdir / "setup.cfg").write_text(settings())


def mutmut(workdir: Path, *args: str, echo: bool = False) -> str:
    result = subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=workdir, text=True,
                            stdout=None if echo else subprocess.PIPE, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise SystemExit(f"mutmut {' '.join(args)} failed with exit code {result.returncode}:\n{result.stdout}")
    return result.stdout or ""


def statuses(workdir: Path) -> dict[str, str]:
    """Mutant name -> status, from `mutmut results --all true` ("    name: status" lines)."""
    return dict(re.findall(r"^\s+(\S+): (.+)$", mutmut(workdir, "results", "--all", "true"), re.MULTILINE))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-children", type=int, default=2, help="mutants tested at once (CPU cores to use)")
    p.add_argument("--workdir", type=Path, default=None, help="working copy to (re)use; default: a fresh one")
    args = p.parse_args(argv)
    try:
        import mutmut as _  # noqa: F401
    except ImportError:
        raise SystemExit("mutmut is not installed: pip install -r benchmarks/requirements.txt") from None
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mutation-"))
    reused = (workdir / "mutants").is_dir()
    prepare(workdir)
    started = time.perf_counter()
    mutmut(workdir, "run", "--max-children", str(args.max_children), echo=True)
    # mutmut keeps a verdict until the mutated function itself changes, so a mutant that survived
    # an earlier run here would never meet the tests written since: test every survivor again.
    earlier = [name for name, status in statuses(workdir).items() if status in SURVIVED] if reused else []
    if earlier:
        print(f"Testing again the {len(earlier)} mutants that survived an earlier run in {workdir}", flush=True)
        mutmut(workdir, "run", "--max-children", str(args.max_children), *earlier, echo=True)
    seconds = time.perf_counter() - started
    found = statuses(workdir)
    counts = {status: sum(s == status for s in found.values()) for status in sorted(set(found.values()))}
    survivors = sorted(name for name, status in found.items() if status in SURVIVED)
    for name in survivors:
        print(mutmut(workdir, "show", name))
    killed = sum(counts.get(s, 0) for s in KILLED)
    survived = sum(counts.get(s, 0) for s in SURVIVED)
    print(json.dumps({
        "killed": killed,
        "survived": survived,
        "score": round(killed / max(killed + survived, 1), 4),
        "statuses": counts,
        "survivors": survivors,
        "modules": list(MODULES),
        "tests": list(TESTS),
        "seconds": round(seconds),
        "workdir": str(workdir),
    }))


if __name__ == "__main__":
    main()
