"""Concepts use cases: six textbook ideas, each a live experiment on transformer_core.

Each function checks its inputs (InputError says what to fix) and returns the core's
result objects, which `views.concepts` draws.
"""

from __future__ import annotations

import math

from i18n import Message
from transformer_core import CheckpointError, EncoderClassifier
from transformer_core.analysis import concepts as core
from transformer_core.tokenization import TokenizerError

from . import llms, models, store
from .markdown import literal
from .policy import InputError, mostly_chinese, quoted, truncate

LM_NAME, CLASSIFIER_NAME, FALLBACK_TOKENIZER = "shakespeare-lm", "sentiment", "shakespeare-bpe"
# a Chinese sentence's classifier in the order experiment: the English one reads Chinese characters as raw bytes
CLASSIFIER_NAME_ZH = "sentiment-zh"
SENTIMENT_CLASSES = ["negative", "positive"]  # transformer_core.training.data.Review.label: 1 positive, 0 negative
MAX_WORDS = 40
MAX_SENTENCE_CHARS = 400
MAX_MATRIX_CHARS = 2000  # 8 rows of 8 numbers fit many times over
MAX_SEED = 2**31 - 1


def refusal(e: core.ConceptInputError, context: str | None = None) -> InputError:
    """The core's refusal as an InputError in the catalogue's words (its English text when it names no reason:
    none of this module's inputs can cause those), within `context` ("concepts.refused.<experiment>") if given."""
    why = Message(f"concepts.core.{e.reason}", **e.fields) if e.reason else str(e)
    return InputError(Message(context, error=why) if context else why)


def _matrix(text: str, name: str):
    if len(text or "") > MAX_MATRIX_CHARS:
        raise InputError(Message("concepts.matrix_too_long", name=name, n=len(text)))
    try:
        return core.parse_matrix(text, name)
    except core.ConceptInputError as e:
        raise refusal(e) from e


def number(value, name: str, lo: float, hi: float) -> float:
    """A slider or number box's value, checked: API clients can send anything."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer like 10**400
        x = math.nan
    if not lo <= x <= hi:  # also refuses NaN
        raise InputError(Message("concepts.number_range", name=name, lo=f"{lo:g}", hi=f"{hi:g}", value=quoted(value)))
    return x


def whole(value, name: str, lo: int, hi: int) -> int:
    return int(number(value, name, lo, hi))


def shipped_models() -> list[str]:
    """The checkpoints of the one registry (lab/models.py), by name; GPT-2 and the real LLMs, which are downloaded,
    are not shipped."""
    return sorted(c.name for c in models.registry(include_cheats=True)
                  if c is not models.GPT2 and c.name not in llms.LLMS)


def weighted_average(x_text, use_projections, wq_text, wk_text, wv_text, scaled):
    x = _matrix(x_text, "X")
    ws = [_matrix(t, n) for t, n in ((wq_text, "W_q"), (wk_text, "W_k"), (wv_text, "W_v"))] if use_projections else []
    try:
        return core.self_attention_average(x, *ws, scaled=bool(scaled))
    except core.ConceptInputError as e:
        raise refusal(e) from e


def scaling(d, n_keys, seed):
    """(every scaling point, the one at the chosen d)."""
    d, n_keys = whole(d, "d", 2, 1024), whole(n_keys, Message("concepts.setting.number_of_keys"), 2, 64)
    points = core.scaling_sweep((*core.SCALING_DIMS, d), n_keys=n_keys, seed=whole(seed, Message("setting.seed"), 0, MAX_SEED))
    return points, next(p for p in points if p.d == d)


def _classifier(name: str = CLASSIFIER_NAME):
    """(model, tokenizer, class names, which model it is): the shipped classifier `name`, else an untrained one."""
    try:
        model = store.model(name)
        if isinstance(model, EncoderClassifier):
            names = SENTIMENT_CLASSES if model.config.n_class == 2 else None
            return model, store.tokenizer(name), names, Message("concepts.shipped_classifier", name=name)
        why = Message("concepts.not_classifier", name=name, kind=type(model).__name__)
    except (CheckpointError, TokenizerError) as e:
        why = str(e)
    try:
        tok = store.tokenizer(FALLBACK_TOKENIZER)
    except TokenizerError as e:
        raise InputError(Message("concepts.no_order_tokenizer", error=str(e))) from e
    return core.random_classifier(tok.vocab_size, seed=0), tok, None, Message("concepts.untrained", why=why)


def order(sentence, seed):
    """(summary, variants, token labels in shuffled order, class names) of the order experiment."""
    sentence, notice = truncate(sentence, MAX_SENTENCE_CHARS)
    chinese = mostly_chinese(sentence)
    # Chinese puts no spaces between words: its characters are what is shuffled
    words = [c for c in sentence if not c.isspace()] if chinese else sentence.split()
    if not 2 <= len(words) <= MAX_WORDS:
        raise InputError(Message("concepts.sentence_words", max_words=MAX_WORDS, n=len(words)))
    word_order = core.shuffled_order(len(words), whole(seed, Message("concepts.setting.shuffle_seed"), 0, MAX_SEED))
    model, tok, names, which = _classifier(CLASSIFIER_NAME_ZH if chinese else CLASSIFIER_NAME)
    # each English word with its leading space, as in running text
    word_ids = [tok.encode(w if chinese else " " + w) for w in words]
    ids = [i for w in word_ids for i in w]
    try:
        perm = core.token_permutation([len(w) for w in word_ids], word_order)
        variants = core.order_experiment(model, ids, perm)
    except core.ConceptInputError as e:
        raise refusal(e, "concepts.refused.order") from e
    names = names or [Message("concepts.class_n", c=c) for c in range(model.config.n_class)]
    labels = [tok.decode([ids[p]]) for p in perm]
    shuffled = literal(("" if chinese else " ").join(words[w] for w in word_order))  # shown, never read as markup
    summary = Message("concepts.order_summary", which=which, shuffled=shuffled, n=len(ids), notice=notice)
    return summary, variants, labels, names


def _learned_table(n_positions: int):
    """(model name, its first n_positions learned positions, note): the shipped LM, or while it
    is missing another shipped model with a learned position table, or (None, None, why)."""
    try:
        learned = core.learned_positions(store.model(LM_NAME), n_positions)
        if learned is not None:
            return LM_NAME, learned, ""
        why = Message("concepts.no_table", name=LM_NAME)
    except CheckpointError as e:
        why = Message("concepts.lm_missing", name=LM_NAME, error=e)
    for name in (n for n in shipped_models() if n != LM_NAME):
        try:
            learned = core.learned_positions(store.model(name), n_positions)
        except CheckpointError:
            continue
        if learned is not None:
            return name, learned, Message("concepts.other_learned", why=why, name=name)
    return None, None, Message("concepts.none_learned", why=why)


def positions(n_positions, d_model):
    """((sinusoidal table, its similarity), (learned title, table, similarity) or None, note)."""
    n_positions = whole(n_positions, Message("concepts.setting.positions"), 2, 256)
    try:
        pe = core.sinusoidal_positions(n_positions, whole(d_model, "d_model", 4, 256))
    except core.ConceptInputError as e:
        raise refusal(e, "concepts.refused.positions") from e
    name, learned, note = _learned_table(n_positions)
    if learned is None:
        return (pe, core.position_similarity(pe)), None, note
    title = Message("concepts.learned_title", name=models.title(name), n=len(learned),
                    max_len=store.model(name).config.max_len)
    return (pe, core.position_similarity(pe)), (title, learned, core.position_similarity(learned)), note


def parameters(d_model):
    """(head counts, {model: parameter table}, problems) for one d_model and every shipped model."""
    try:
        counts = core.head_parameter_counts(whole(d_model, "d_model", 8, 1024))
    except core.ConceptInputError as e:
        raise refusal(e, "concepts.refused.parameters") from e
    tables, problems = {}, []
    for name in shipped_models():
        try:
            tables[name] = core.parameter_table(store.model(name))
        except CheckpointError as e:
            problems.append(f"- `{name}`: {e}")
    return counts, tables, problems


def trace(src_text, tgt_text, label_smoothing, seed, follow_row=0, follow_position=1):
    """(the traced run, the batch row and target position to follow)."""
    src, tgt = _matrix(src_text, Message("concepts.setting.source_ids")), _matrix(tgt_text, Message("concepts.setting.target_ids"))
    smoothing = number(label_smoothing, Message("concepts.setting.label_smoothing"), 0.0, 0.5)
    model = core.tiny_encoder_decoder(whole(seed, Message("concepts.setting.model_seed"), 0, MAX_SEED))
    try:
        run = core.trace_encoder_decoder(model, src, tgt, smoothing)
    except core.ConceptInputError as e:
        raise refusal(e, "concepts.refused.trace") from e
    B, T = run.targets.shape
    return run, whole(follow_row, Message("concepts.setting.follow_row"), 0, B - 1), whole(follow_position, Message("concepts.setting.follow_position"), 0, T - 1)
