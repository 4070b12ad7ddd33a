"""Toy translation tasks whose right answer is known: copy, reverse, sort, pig latin.

Lesson: an encoder-decoder is easiest to understand on a "translation" we can
check by hand. Copying a sequence must make cross-attention a diagonal (output
position i reads source position i), reversing makes it an anti-diagonal,
sorting a permutation; pig latin mixes local re-ordering inside each word with
a copy of the sentence's word order.

Every task maps a source string to a target string; `Task.pair` gives both and
`examples` draws a seeded, reproducible set of them. The sizes a translator for
these tasks comes in (`PRESETS`) and the scores its model card and the app report
(`measure`, `accuracy_by_length`) are here too: the app serves them, training
(transformer_core.training.translation) builds and trains the models.

Pig latin rules (`pig_latin_word`), chosen to be checkable by hand:
* A word is a maximal run of ASCII letters; everything else (spaces, digits,
  punctuation, apostrophes, hyphens) is copied through unchanged and in place,
  so "dog!" -> "ogday!", "don't" -> "onday'tay", "sea-change" ->
  "easay-angechay" and "3rd" -> "3rday".
* Vowels are a, e, i, o, u. A word starting with a vowel gets "way":
  "apple" -> "appleway".
* Otherwise the leading consonant cluster moves to the end, then "ay":
  "she" -> "eshay", "school" -> "oolschay".
* "y" is a consonant as the first letter ("yellow" -> "ellowyay") and a vowel
  anywhere else ("rhythm" -> "ythmrhay", "my" -> "ymay").
* "qu" moves as one unit: "queen" -> "eenquay", "squeal" -> "ealsquay".
* A word with no vowel at all just gets "ay": "hmm" -> "hmmay".
* Capitals follow the word, not the letter: a capitalised word stays
  capitalised ("School" -> "Oolschay", "I" -> "Iway"), an all-capitals word of
  two or more letters stays all capitals ("NASA" -> "ASANAY"), any other mix
  of cases comes out lower case ("McBeth" -> "Ethmcbay").
"""

from __future__ import annotations

import random
import re
import string
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from .decoding.seq2seq import Codec, exact_match

SYMBOLS = "0123456789"  # the toy tasks' 10 symbols (as in the Annotated Transformer's copy task)
PUNCTUATION = " ,;:.!?"  # what pig latin sentences hold besides letters
TYPED = "'-0123456789"  # and what people type too: apostrophes, hyphens, digits (all copied through)
CONTRACTIONS = ("s", "t", "d", "ll", "re", "ve", "st", "em")  # after an apostrophe: dog's, do't, prov'd, know'st
TOY_LENGTHS = (1, 10)  # source lengths the toy models are trained on
PIG_LATIN_WORDS = (1, 10)  # words per pig latin sentence
MAX_WORD_LETTERS = 12  # longer Shakespeare words are left out of the pig latin data
UNSEEN_EVERY = 10  # one distinct word in ten never appears in training sentences
TEST_SIZE = 1000  # held-out sources a model card's accuracy is measured on

VOWELS = frozenset("aeiou")
_WORD = re.compile(r"[A-Za-z]+")


class TaskError(ValueError):
    """An unknown task name or an input the task cannot take."""


# ---------------------------------------------------------------- the transformations


def copy(text: str) -> str:
    return text


def reverse(text: str) -> str:
    return text[::-1]


def sort(text: str) -> str:
    return "".join(sorted(text))


def _onset_length(word: str) -> int:
    """How many leading letters form the consonant cluster that moves to the end."""
    w, i = word.lower(), 0
    while i < len(w):
        if w[i] in VOWELS or (w[i] == "y" and i > 0):
            break
        i += 2 if w[i : i + 2] == "qu" else 1
    return min(i, len(w))


def _match_case(word: str, out: str) -> str:
    if len(word) > 1 and word.isupper():
        return out.upper()
    if word[0].isupper():
        return out[0].upper() + out[1:]
    return out


def pig_latin_word(word: str) -> str:
    """One word of letters in pig latin (rules in the module docstring)."""
    n, lower = _onset_length(word), word.lower()
    out = lower + "way" if n == 0 else lower[n:] + lower[:n] + "ay"
    return _match_case(word, out)


def pig_latin(sentence: str) -> str:
    """Every word of the sentence in pig latin; non-letters stay where they are."""
    return _WORD.sub(lambda m: pig_latin_word(m.group()), sentence)


# ---------------------------------------------------------------- random sources


def random_symbols(rng: random.Random, lengths: tuple[int, int] = TOY_LENGTHS) -> str:
    """A string of uniformly drawn symbols, its length uniform in lengths[0]..lengths[1]."""
    return "".join(rng.choice(SYMBOLS) for _ in range(rng.randint(*lengths)))


@dataclass(frozen=True)
class WordPool:
    """Shakespeare's words split into those training may use and those kept unseen."""

    seen: tuple[str, ...]  # distinct words (lower case) allowed in training sentences
    seen_running: tuple[str, ...]  # the same words with their frequency in the text
    unseen: tuple[str, ...]  # distinct words that only held-out sentences use


def _is_unseen(word: str) -> bool:
    # a hash, not a random draw: the split is the same on every machine and run
    return zlib.crc32(word.encode()) % UNSEEN_EVERY == 0


@lru_cache(maxsize=1)
def word_pool() -> WordPool:
    """Words of the Shakespeare train split (letters only, at most MAX_WORD_LETTERS)."""
    from .training import data

    running = [w for w in re.findall(r"[a-z]+", data.shakespeare("train").lower()) if len(w) <= MAX_WORD_LETTERS]
    distinct = sorted(set(running))
    return WordPool(
        seen=tuple(w for w in distinct if not _is_unseen(w)),
        seen_running=tuple(w for w in running if not _is_unseen(w)),
        unseen=tuple(w for w in distinct if _is_unseen(w)),
    )


def _typed(word: str, rng: random.Random) -> str:
    """Now and then a word as people type it: with an apostrophe, or with or as a number.

    Contractions append a train-split word ("s", "t", ...), never split one, so no letter run
    of a training sentence is a word kept unseen."""
    r = rng.random()
    if r < 0.04:
        return f"{word}'{rng.choice(CONTRACTIONS)}"
    if r < 0.06:
        return rng.choice(["'" + word, word + "'"])  # 'tis, lovers'
    if r < 0.09:
        number = str(rng.randint(0, 10 ** rng.randint(1, 4) - 1))
        return rng.choice([number, number, number + word, word + number])  # 1599, 3rd
    return word


def _styled(words: list[str], rng: random.Random) -> str:
    """Join words into a sentence with some capitals, punctuation, apostrophes, hyphens and numbers, as real text has.

    Any mark may come between words or at the end ("Holla! Bernardo!", a verse line ending in a
    comma): a model that only saw "!" last stops translating at the first one."""
    out = []
    for i, word in enumerate(words):
        r = rng.random()
        if r < 0.03:
            word = word.upper()
        elif (i == 0 and r < 0.5) or r < 0.1:
            word = word.capitalize()
        out.append(_typed(word, rng))
        if i < len(words) - 1:
            mark = rng.choice(",;:,;:.!?") if rng.random() < 0.12 else ""
            # sea-change, Shakespeare's "tables,--meet", a typed " - "
            out.append(mark + (rng.choice(["-", "-", "--", " - "]) if rng.random() < 0.06 else " "))
    return "".join(out) + rng.choice(["", "", ".", ".", "!", "?", ",", ";", ":", "--"])


def random_sentence(rng: random.Random, unseen: bool = False, n_words: tuple[int, int] = PIG_LATIN_WORDS) -> str:
    """A sentence of Shakespeare's words; with `unseen`, at least one word never used in training."""
    pool = word_pool()
    # half the words as they come in running text (short, common), half uniform over the
    # distinct words (long, rare): the model must learn the rule, not a word list
    words = [rng.choice(pool.seen_running if rng.random() < 0.5 else pool.seen) for _ in range(rng.randint(*n_words))]
    if unseen:
        for i in range(len(words)):
            if i == 0 or rng.random() < 0.3:
                words[i] = rng.choice(pool.unseen)
        rng.shuffle(words)
    return _styled(words, rng)


# ---------------------------------------------------------------- tasks


@dataclass(frozen=True)
class Task:
    """A source -> target function and how to draw sources for it."""

    name: str
    transform: Callable[[str], str]
    sample: Callable[[random.Random, str], str]  # (rng, split) -> source; split "unseen" for held-out words
    symbols: str  # the characters a source may hold (the tokenizer's alphabet)
    example: str  # a source to show; fixed, so showing it never needs the word pool's corpus

    def pair(self, source: str) -> tuple[str, str]:
        return source, self.transform(source)


def _toy(name: str, transform: Callable[[str], str]) -> Task:
    return Task(name, transform, lambda rng, split: random_symbols(rng), SYMBOLS, "3141592653")


TASKS = {
    "copy": _toy("copy", copy),
    "reverse": _toy("reverse", reverse),
    "sort": _toy("sort", sort),
    "pig_latin": Task("pig_latin", pig_latin, lambda rng, split: random_sentence(rng, unseen=split == "unseen"),
                      string.ascii_letters + PUNCTUATION + TYPED, "Quiet, the school rhythm is an apple!"),
}
TOY_TASKS = ("copy", "reverse", "sort")


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise TaskError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")
    return TASKS[name]


# held-out sets come from their own seeds, never from the training stream
_SPLIT_SEEDS = {"validation": 1, "test": 2, "unseen": 3}


def examples(task: Task | str, split: str, n: int, seed: int = 0) -> list[tuple[str, str]]:
    """n (source, target) pairs of a split ("test", "validation", "unseen"), the same on every call."""
    task = get_task(task) if isinstance(task, str) else task
    if split not in _SPLIT_SEEDS:
        raise TaskError(f"unknown split {split!r}; choose one of {', '.join(_SPLIT_SEEDS)}")
    rng = random.Random(f"{task.name}/{split}/{seed}")
    return [task.pair(task.sample(rng, split)) for _ in range(n)]


def play_lines(split: str = "test") -> list[str]:
    """Distinct spoken lines of a split's Shakespeare plays that the pig latin task takes, in order.

    Real text, never drawn from the word pool: lines of 1-10 words (PIG_LATIN_WORDS) using only the
    task's characters.
    The first line after a blank one (a speaker's name or a heading), all-capital lines and stage
    directions ([...], over several lines too) are left out."""
    from .training import data

    alphabet, lines = set(TASKS["pig_latin"].symbols), {}
    for text in data.shakespeare_works(split).values():
        previous, direction = "", False
        for line in (raw.strip() for raw in text.splitlines()):
            direction = direction or "[" in line
            if (previous and not direction and not line.isupper() and set(line) <= alphabet
                    and PIG_LATIN_WORDS[0] <= len(line.split()) <= PIG_LATIN_WORDS[1]):
                lines[line] = None
            direction = direction and "]" not in line
            previous = line
    return list(lines)


# ---------------------------------------------------------------- the translators' sizes


@dataclass(frozen=True)
class Preset:
    """A model size: every preset has n_layer encoder and n_layer decoder blocks."""

    d_model: int
    n_head: int
    n_layer: int
    d_ff: int


PRESETS = {
    "tiny": Preset(32, 2, 1, 64),
    "small": Preset(64, 4, 2, 256),
    "medium": Preset(128, 4, 2, 512),
    "large": Preset(128, 4, 3, 512),
}


# ---------------------------------------------------------------- scores


def measure(model, codec: Codec, task: Task) -> dict[str, float]:
    """Exact-match accuracy on the 1,000 held-out test sources (for pig latin also unseen-word sentences
    and the lines of the test plays)."""
    scores = {"test": exact_match(model, codec, examples(task, "test", TEST_SIZE))}
    if task.name == "pig_latin":
        scores["unseen"] = exact_match(model, codec, examples(task, "unseen", TEST_SIZE))
        scores["real"] = exact_match(model, codec, [task.pair(line) for line in play_lines("test")])
    return scores


def accuracy_by_length(model, codec: Codec, task: Task, lengths: range, n: int = 100,
                       seed: int = 0) -> dict[int, float]:
    """Exact match of a toy-task model on n held-out sources of each length (beyond training too)."""
    scores = {}
    for length in lengths:
        rng = random.Random(f"{task.name}/length/{length}/{seed}")
        scores[length] = exact_match(model, codec, [task.pair(random_symbols(rng, (length, length))) for _ in range(n)])
    return scores
