"""The rooms keep their doors: who may import whom (text -> policy -> run -> figures -> tab)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imports(path: Path) -> set[str]:
    """Every module a file imports, relative imports resolved against its package."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", files("ui"), ids=lambda p: p.name)
def test_ui_is_layout_and_adapters_it_imports_no_torch_and_no_core(path):
    bad = {m for m in imports(path) if m.split(".")[0] in ("torch", "transformer_core")}
    assert not bad, f"{path.name} imports {sorted(bad)}: that work belongs in lab/"


@pytest.mark.parametrize("path", files("ui") + files("views"), ids=lambda p: p.name)
def test_each_value_is_clamped_once_by_the_use_case_never_again_by_a_tab_or_a_view(path):
    """The input policy's clamp runs in lab/, where a run is cut; a tab or a view that clamps again keeps a second
    copy of the bounds (a slider's 0..n-1 beside the slice's own)."""
    assert "lab.policy.clamp" not in imports(path)


@pytest.mark.parametrize("path", files("lab") + files("transformer_core"), ids=lambda p: p.name)
def test_the_core_and_the_use_cases_never_import_gradio(path):
    assert not {m for m in imports(path) if m.split(".")[0] in ("gradio", "ui")}


@pytest.mark.parametrize("path", files("transformer_core/model"), ids=lambda p: p.name)
def test_the_model_room_imports_nothing_else_from_the_package(path):
    inside = {m for m in imports(path) if m.startswith("transformer_core")}
    assert all(m.startswith("transformer_core.model") for m in inside), sorted(inside)


@pytest.fixture(scope="module")
def served_modules() -> set[str]:
    """Every module that importing the app loads, in a fresh interpreter, so that no other test's imports count.
    (One interpreter for both tests below: importing the app takes seconds.)"""
    code = "import app, sys; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_serving_the_app_imports_no_training_code(served_modules):
    """Training (data downloads, BERT import, distillation, the train_* commands) is for building checkpoints; the
    app serves from them."""
    assert sorted(m for m in served_modules if m.startswith("transformer_core.training")) == []


def test_serving_the_app_imports_no_ddp_code(served_modules):
    """DistributedDataParallel training (transformer_core.distributed, torch's elastic launcher) is for torchrun;
    where a model runs (device.py) reads the process layout without it."""
    assert sorted(m for m in served_modules
                  if m == "transformer_core.distributed" or m.startswith("torch.distributed.elastic")) == []


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _project_imports(path: Path, modules: set[str]) -> set[str]:
    """The project's modules a file imports (a name imported from a package counts as its own module if it is
    one: `from lab import store` is lab.store), at any depth of the file: imports inside functions too."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    if path.name == "__init__.py":
        package = path.relative_to(ROOT).parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(package[: len(package) - node.level + 1]) if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                     for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def test_no_two_modules_import_each_other_even_by_way_of_others():
    paths = [p for folder in ("app.py", "cli.py", "i18n", "lab", "ui", "views", "transformer_core", "tools")
             for p in ([ROOT / folder] if folder.endswith(".py") else files(folder))]
    modules = {_module_name(p): p for p in paths}
    graph = {name: _project_imports(path, set(modules)) - {name} for name, path in modules.items()}
    # a package's __init__ gathering its modules' names is no circle: its modules never need it to be read first
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    graph = {name: {m for m in imported if m not in packages} for name, imported in graph.items()}
    circles = []
    for start in graph:
        stack, seen = [(start, [start])], set()
        while stack:
            name, path = stack.pop()
            for nxt in graph.get(name, ()):
                if nxt == start:
                    circles.append(" -> ".join([*path, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert circles == []


WALK_FILES = 19  # issue 59 asks for 12: the walk may get shorter, never longer


def test_a_sentence_typed_in_the_attention_tab_passes_through_few_files_of_ours():
    """The Attention tab's handler on a 128-token text enters at most WALK_FILES files of this repo
    (tools/walk.py, which lists them in order): a reader follows it top to bottom."""
    from tools import walk

    result = walk.measure()
    assert result["n_files"] <= WALK_FILES, result["files"]
