"""Which model a request means, loaded once: the one place every use case picks a model.

`resolve` turns a picker label or a checkpoint name into the name, `load` gives the model and
its tokenizer (or one InputError wording for every tab), and `key` is the start of every run
cache's key: the model folder, the name and the checkpoint's identity, so a checkpoint written
again in place is never answered from an old run.
"""

from __future__ import annotations

from i18n import Message
from transformer_core import CheckpointError, to_simplified

from . import store
from .policy import InputError

GPT2_LABEL = Message("attention.gpt2_label")
# an older picker label still opens its model (links written before the one label existed)
ALIASES = {"GPT-2 (downloads from the Hugging Face Hub)": store.GPT2}
# checkpoints trained on simplified characters (their data was converted with OpenCC's t2s)
SIMPLIFIED_CHINESE = frozenset({"tang-poems-char", "sentiment-zh", "sentiment-zh-pretrained"})


def choices(include_cheats: bool = False) -> dict[str, str]:
    """Picker label -> checkpoint name: every shipped checkpoint, then GPT-2 (downloaded on first use)."""
    return {**store.checkpoints(include_cheats), GPT2_LABEL: store.GPT2}


def resolve(label_or_name: str | None, arch: str | None = None) -> str:
    """The checkpoint name of a picker label ("sentiment (classifier)") or of the name itself;
    with `arch`, a model of another kind is an InputError too."""
    names = {**choices(), **ALIASES}
    if label_or_name in names:
        name = names[label_or_name]
    elif label_or_name in names.values():
        name = label_or_name
    else:
        raise InputError(Message("attention.no_model", label=repr(label_or_name), folder=store.model_dir()))
    if arch is not None and store.arch(name) != arch:
        raise InputError(Message("models.wrong_kind", name=repr(name), kind=Message(f"store.kind.{store.arch(name)}"),
                                 needed=Message(f"store.kind.{arch}")))
    return name


def read_as(name: str, text: str) -> tuple[str, str]:
    """(text as checkpoint `name` reads it, a notice or ""): a model trained on simplified Chinese gets
    traditional characters converted to simplified ones (same length, so every offset holds), and says so."""
    if name not in SIMPLIFIED_CHINESE:
        return text, ""
    simplified = to_simplified(text)
    changed = sum(a != b for a, b in zip(text, simplified))
    return simplified, Message("models.simplified", n=changed) if changed else ""


def load(name: str) -> tuple[object, object]:
    """(model, tokenizer) of checkpoint `name`, or an InputError that says what is missing."""
    try:
        return store.load(name)
    except CheckpointError as e:
        raise InputError(Message("translate.not_loaded", name=repr(name), error=e)) from e


def key(name: str, *inputs) -> tuple:
    """A run cache key: model folder, checkpoint name and identity, then what the run read."""
    return (str(store.model_dir()), name, store.identity(name), *inputs)
