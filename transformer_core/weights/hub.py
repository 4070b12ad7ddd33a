"""Checkpoints: save and load models (safetensors + config.json) with the tokenizer beside.

A checkpoint folder holds `model.safetensors`, `config.json` (the model's frozen
config, with `arch` naming its class, and what the checkpoint reads: `languages`, `script`,
which the app routes texts by and the model itself ignores), `tokenizer.json` and a `README.md`
model card. Loading goes through huggingface_hub's `PyTorchModelHubMixin`, so the same
call takes a local folder or a Hub repo, written `hf://namespace/name`: any other
name is a local path, because "assets/sentiment" is also a valid repo id and a
folder missing here must be reported missing, not looked up online. No pickle anywhere.
"""

from __future__ import annotations

import contextlib
import copy
import json
import typing
from pathlib import Path

import torch
from huggingface_hub import snapshot_download
from torch import nn
from torch.overrides import TorchFunctionMode

from ..model.models import MODEL_CLASSES

CHECKPOINT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "README.md")
HUB_PREFIX = "hf://"  # as huggingface_hub's file system writes Hub paths
READS = ("languages", "script")  # what a checkpoint reads ({"languages": ["zh"], "script": "simplified"})
# How a checkpoint whose matrices are stored in another form is read back: config.json's "weights" -> its loader,
# (model class, folder, config, device) -> model. Each form's module adds its own (weights/int8.py), so the one loader
# below never imports them.
LOADERS: dict[str, typing.Callable[[type, Path, dict, typing.Any], nn.Module]] = {}


class CheckpointError(Exception):
    """A checkpoint is missing, unreachable, corrupted or does not fit its config."""


class CheckpointTooLarge(CheckpointError):
    """A checkpoint whose model would take more bytes in memory, as loaded, than the caller allows."""

    def __init__(self, folder, parameters: int, limit_bytes: int, bytes_: int | None = None):
        self.parameters, self.limit_bytes = parameters, limit_bytes
        self.bytes = parameters * FLOAT32_BYTES if bytes_ is None else bytes_
        super().__init__(f"{folder}: its config asks for {parameters:,} parameters, "
                         f"{self.bytes / 2**30:.1f} GiB in memory, over the limit of {limit_bytes / 2**30:.1f} GiB")


FLOAT32_BYTES = 4


def save_checkpoint(model: nn.Module, folder: str | Path, tokenizer=None, card: str | None = None,
                    dtype: torch.dtype | None = None, reads: dict | None = None) -> Path:
    """Write model weights + config (+ tokenizer.json, + model card) into `folder`.

    With `dtype` (e.g. torch.float16, half the file) the weights are stored in it; `load_model`
    reads them back into the model's own float32 parameters. `model` itself is not changed.
    `reads` ({"languages": ["en", "zh"]}) goes into config.json; a checkpoint written again over one
    keeps what the old config said it reads (a model retrained in a copy of assets/ still reads Chinese)."""
    folder = Path(folder)
    try:
        kept = {k: v for k, v in json.loads((folder / "config.json").read_text(encoding="utf-8")).items() if k in READS}
    except (OSError, ValueError):
        kept = {}
    (copy.deepcopy(model).to(dtype) if dtype is not None else model).save_pretrained(folder)
    if kept or reads:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        config.update({**kept, **{k: v for k, v in (reads or {}).items() if k in READS}})
        (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if tokenizer is not None:
        tokenizer.save(str(folder / "tokenizer.json"))
    if card is not None:
        (folder / "README.md").write_text(card, encoding="utf-8")
    return folder


def hub_repo(name_or_path: str | Path) -> str | None:
    """The Hub repo id that `hf://namespace/name` asks for; None for anything else (a local path)."""
    if isinstance(name_or_path, str) and name_or_path.startswith(HUB_PREFIX):
        return name_or_path.removeprefix(HUB_PREFIX)
    return None


def missing_folder(name_or_path: str | Path, what: str) -> str:
    """The message for a local path that is not a folder: the absolute path looked in, and how to ask the Hub."""
    path = Path(name_or_path).expanduser()
    return (f"no {what} folder at {path.absolute()} (from {str(name_or_path)!r}, working directory {Path.cwd()}); "
            f"for a Hugging Face Hub repo, write {HUB_PREFIX}namespace/name")


def resolve(name_or_path: str | Path) -> Path:
    """A local checkpoint folder; for `hf://namespace/name`, that Hub repo's checkpoint files, downloaded."""
    repo_id = hub_repo(name_or_path)
    if repo_id is None:
        path = Path(name_or_path).expanduser()
        if not path.is_dir():
            raise CheckpointError(missing_folder(name_or_path, "checkpoint"))
        return path
    try:
        return Path(snapshot_download(repo_id, allow_patterns=list(CHECKPOINT_FILES)))
    except Exception as e:  # offline, unknown repo, auth: all mean "cannot get it"
        raise CheckpointError(
            f"could not fetch {repo_id!r} from the Hugging Face Hub ({type(e).__name__}: {e}). "
            "Loading from the Hub needs a network connection; pass a local folder instead."
        ) from e


def read_config(folder: Path) -> dict:
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise CheckpointError(f"{folder} has no config.json (looked for {config_file})")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{config_file} is not valid JSON: {e}") from e
    if not isinstance(config, dict) or config.get("arch") not in MODEL_CLASSES:
        raise CheckpointError(
            f"{config_file} does not name a known architecture in 'arch' (expected one of {sorted(MODEL_CLASSES)})"
        )
    return config


# what a module's __init__ draws its first weights with: on the meta device they compute nothing, yet each call
# still ran torch's Python reference implementation, and the first imported torch._dynamo: seconds of the app's
# start-up, which counts every checkpoint's parameters before it loads any
INITIALISERS = frozenset({"normal_", "uniform_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
                          "xavier_normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "fill_", "zero_"})


class _NoInitialisers(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", None) in INITIALISERS:
            return args[0] if args else (kwargs or {})["tensor"]  # the tensor, as an in-place initialiser returns it
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def shapes_only():
    """Modules built inside are on PyTorch's meta device: shapes only, no memory, and no initial values drawn."""
    with torch.device("meta"), _NoInitialisers():
        yield


def _shapes(config: dict) -> nn.Module:
    """The model of `config` (a config.json's dict) built on PyTorch's meta device: shapes, no memory.
    CheckpointError for a config the model class refuses."""
    cls = MODEL_CLASSES[config["arch"]]
    config_class = typing.get_type_hints(cls.__init__)["config"]
    # as from_pretrained does, keys that are not the config's fields (`languages`, `weights`, `task`) are skipped
    sizes = {k: v for k, v in config.items() if k in config_class.__dataclass_fields__}
    try:
        with shapes_only():
            return cls(config_class(**sizes))
    except (TypeError, ValueError) as e:  # a field of the wrong type, sizes that do not fit (ConfigError)
        raise CheckpointError(f"config {config!r:.200} does not describe a {cls.__name__}: {e}") from e


def parameter_count(config: dict) -> int:
    """How many parameters the model of `config` has, counted on the meta device (no tensor allocated)."""
    return sum(p.numel() for p in _shapes(config).parameters())


def memory_bytes(config: dict) -> int:
    """The bytes the model of `config` takes in memory as loaded: 4 a parameter (float32), 2 a matrix weight for
    a checkpoint kept float16 (weights/float16.py: the real LLMs)."""
    parameters = list(_shapes(config).parameters())
    if config.get("weights") != "float16":
        return sum(p.numel() for p in parameters) * FLOAT32_BYTES
    return sum(p.numel() * (2 if p.dim() == 2 else FLOAT32_BYTES) for p in parameters)


def check_size(folder: Path, limit_bytes: int | None) -> int:
    """The parameter count of the checkpoint in `folder`, read from its config alone; CheckpointTooLarge when
    the model would take more than `limit_bytes` in memory (None: no limit). Before any weight is read: a
    config of 2.4 GB took 26-34 s to build and fill, only to be refused."""
    config = read_config(folder)
    parameters, taken = parameter_count(config), memory_bytes(config)
    if limit_bytes is not None and taken > limit_bytes:
        raise CheckpointTooLarge(folder, parameters, limit_bytes, taken)
    return parameters


def load_model(name_or_path: str | Path, device: torch.device | str = "cpu", limit_bytes: int | None = None) -> nn.Module:
    """Load a DecoderLM / EncoderClassifier / EncoderDecoder from a folder or `hf://` Hub repo, in eval mode;
    with `limit_bytes`, a checkpoint larger than that in float32 is refused (CheckpointTooLarge) first."""
    folder = resolve(name_or_path)
    check_size(folder, limit_bytes)
    cls = MODEL_CLASSES[read_config(folder)["arch"]]
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise CheckpointError(f"{folder} has no model.safetensors (looked for {weights})")
    try:
        config = read_config(folder)
        if config.get("weights") in LOADERS:  # int8 matrices with a scale per row (weights/int8.py)
            return LOADERS[config["weights"]](cls, folder, config, device).to(device).eval()
        # strict: a weight missing from or extra to the file is an error, not a silent random init
        model = cls.from_pretrained(str(folder), strict=True, map_location=str(device))
    except Exception as e:
        raise CheckpointError(f"could not load {cls.__name__} from {folder}: {type(e).__name__}: {e}") from e
    return model.to(device).eval()
