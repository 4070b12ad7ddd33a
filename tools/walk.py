"""Measure the Attention walk: which files of this repo a typed sentence passes through, in order.

`python -m tools.walk [--cold] [--tokens N]` calls the Attention tab's handler (what the `#attention-run`
button runs) on a fresh text of N tokens (128: the most a heatmap draws) for the shipped Shakespeare LM, under
`sys.setprofile`, and prints one JSON line: the files entered, in the order of their first entry, their count,
and how often the walk climbs back up a layer (ui > views > lab > transformer_core, with i18n and app.py
not counted as layers: every room may ask the catalogue for a sentence). The model is loaded and one other
text drawn first, as in a running app, unless --cold. Gradio, torch, numpy and the standard library are not
counted: a file counts when code of its own runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"ui": 0, "views": 1, "lab": 2, "transformer_core": 3}  # top to bottom: a caller sits above its callee
MODEL = "shakespeare-lm"


def _ours(filename: str) -> str | None:
    """`filename` relative to the repo root when it is our code (not tools/ itself), else None."""
    path = Path(filename)
    if not path.is_absolute() or ROOT not in path.parents:
        return None
    relative = path.relative_to(ROOT).as_posix()
    return None if relative.startswith(("tools/", ".")) or "/site-packages/" in relative else relative


def walk(fn, *args, **kwargs) -> dict:
    """Run `fn(*args, **kwargs)` and return the files of ours it entered (in order of first entry), their count,
    and the climbs: steps of the walk, file by file, from a layer to one above it."""
    entered: dict[str, None] = {}
    steps: list[str] = []  # the file running after each call and return, where it is ours

    def profile(frame, event, arg):
        if event == "call":
            here = _ours(frame.f_code.co_filename)
        elif event == "return" and frame.f_back is not None:
            here = _ours(frame.f_back.f_code.co_filename)
        else:
            return
        if here is None:
            return
        if event == "call":
            entered.setdefault(here)
        if not steps or steps[-1] != here:
            steps.append(here)

    sys.setprofile(profile)
    try:
        fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
    layers = [LAYERS[f.split("/")[0]] for f in steps if f.split("/")[0] in LAYERS]
    layers = [layer for i, layer in enumerate(layers) if i == 0 or layers[i - 1] != layer]
    climbs = sum(after < before for before, after in zip(layers, layers[1:]))
    return {"files": list(entered), "n_files": len(entered), "climbs": climbs}


def text_of(n_tokens: int) -> str:
    """A text the Shakespeare LM reads as exactly `n_tokens` tokens (it reads characters), never asked before."""
    line = "ROMEO: But soft, what light through yonder window breaks? It is the east, and Juliet is the sun. "
    return (line * (n_tokens // len(line) + 1))[:n_tokens - 1] + "!"


def measure(n_tokens: int = 128, cold: bool = False) -> dict:
    """The Attention walk of a fresh `n_tokens`-token text (see the module's note), as `walk` gives it."""
    from ui import attention  # the tab's module, as app.py imports it: its imports are not the walk

    settings = dict(model=MODEL, group="decoder", layer=0, head=0, query=8, lang="en")
    if not cold:
        attention.attention(text="To be, or not to be", **settings)
    return walk(attention.attention, text=text_of(n_tokens), **settings)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=128, help="the text's length in tokens (default 128)")
    parser.add_argument("--cold", action="store_true", help="walk without loading the model and drawing first")
    args = parser.parse_args(argv)
    result = measure(args.tokens, args.cold)
    print(json.dumps({"walk": "attention", "tokens": args.tokens, "cold": args.cold, **result}))

if __name__ == "__main__":
    main()
