"""lab: the app's use cases, free of Gradio.

text -> input policy -> tokenizer -> traced forward pass -> a labelled run the figures slice.
Every tab calls these functions, and so can any Python client; each raises InputError with
a message for the person when the input cannot be used.
"""

from . import models, reading, store
from .attention import AttentionRun, WhileGeneratingRun, attention_run, while_generating_run
from .cache import RunCache
from .masking import CheatResult, MaskingRun, cheating, masking_run
from .policy import MAX_CHARS, InputError, Tokens, clamp, fit_tokens, notice, truncate

__all__ = [
    "models", "reading", "store", "InputError", "MAX_CHARS", "Tokens", "clamp", "fit_tokens", "notice", "truncate",
    "RunCache",
    "AttentionRun", "WhileGeneratingRun", "attention_run", "while_generating_run",
    "CheatResult", "MaskingRun", "cheating", "masking_run",
]
