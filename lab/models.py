"""Which model a request means, loaded once: the one place every use case picks a model.

`resolve` turns a picker label or a checkpoint name into the name, `load` gives the model and
its tokenizer (or one InputError wording for every tab), and `key` is the start of every run
cache's key: the model folder, the name and the checkpoint's identity, so a checkpoint written
again in place is never answered from an old run.
"""

from __future__ import annotations

from transformer_core import CheckpointError

from . import store
from .policy import InputError

GPT2_LABEL = "gpt2 (GPT-2 from the Hugging Face Hub)"
# an older picker label still opens its model (links written before the one label existed)
ALIASES = {"GPT-2 (downloads from the Hugging Face Hub)": store.GPT2}


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
        raise InputError(f"No model {label_or_name!r} in {store.model_dir()}; pick one from the list.")
    if arch is not None and store.arch(name) != arch:
        raise InputError(f"The model {name!r} is a {store.KIND_NAMES[store.arch(name)]}; this needs a "
                         f"{store.KIND_NAMES[arch]}: pick one in the model list.")
    return name


def load(name: str) -> tuple[object, object]:
    """(model, tokenizer) of checkpoint `name`, or an InputError that says what is missing."""
    try:
        return store.load(name)
    except CheckpointError as e:
        raise InputError(f"The model {name!r} could not be loaded: {e}") from e


def key(name: str, *inputs) -> tuple:
    """A run cache key: model folder, checkpoint name and identity, then what the run read."""
    return (str(store.model_dir()), name, store.identity(name), *inputs)
