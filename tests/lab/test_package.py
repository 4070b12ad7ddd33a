"""The lab package: its use cases import without Gradio."""

import json
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


def test_no_use_case_imports_gradio():
    assert "gradio" not in {m.split(".")[0] for m in sys.modules if m.startswith("lab")}
    import importlib

    for name in ("attention", "concepts", "generate", "live", "masking", "models", "sentiment", "tokens", "translate"):
        module = importlib.import_module(f"lab.{name}")
        assert not any(getattr(v, "__module__", "").startswith("gradio") for v in vars(module).values())


def test_every_lab_module_imports_in_a_fresh_interpreter_without_gradio():
    """The in-process check above cannot see Gradio that another test already imported: this one starts clean."""
    script = (
        "import importlib, json, pkgutil, sys\n"
        "import lab\n"
        "names = sorted(m.name for m in pkgutil.iter_modules(lab.__path__))\n"
        "for name in names:\n"
        "    importlib.import_module('lab.' + name)\n"
        "print(json.dumps({'modules': names, 'ui': sorted(m for m in sys.modules if m.split('.')[0] in "
        "('gradio', 'ui', 'views'))}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["modules"] == sorted(p.stem for p in (ROOT / "lab").glob("*.py") if p.stem != "__init__")
    assert found["ui"] == []  # neither Gradio nor the app's ui/ or views/ packages
