"""transformer_core: one inspectable transformer that every Transformer Lab tab runs on.

The names below are what the app and a student use, in the order of the lesson: tokenize, embed, attend,
build a block, assemble the models, decode and sample, then look inside. Everything else is imported from
its own module: the training commands and their library (data, the loop, BERT import, distillation) from
`transformer_core.training`, and the internals the tests check (the KV cache, beam steps) from theirs.
Serving the app imports no training code.
"""

# where it runs: CPU or GPU, one helper for "the device this model lives on"
from .device import DeviceError, default_device, device_of

# 1. tokenize: text -> ids, and the BPE merges that built the vocabulary
from .tokenization import (
    BpeTraining,
    MergeStep,
    TextTokenizer,
    TokenizerError,
    TokenSpan,
    sanitize,
    train_bpe_steps,
)
from .chinese import to_simplified

# 2. embed: ids -> vectors that know their position
from .model.layers import Embeddings, SequenceTooLongError, sinusoidal_encoding

# 3. attend: which positions may see which (masks), then softmax(q k^T / sqrt(d_head)) v per head
from .model.masks import (
    MASK_KINDS,
    Mask,
    MaskError,
    build_mask,
    causal_mask,
    dilated_window_mask,
    global_window_mask,
    no_mask,
    padding_mask,
    sliding_window_mask,
)
from .model.layers import MultiHeadAttention, attend

# 4. a block: attention and a feed-forward layer, each behind a residual
from .model.layers import Block, FeedForward

# 5. the models, their frozen configs, the trace that records inside them, and their checkpoints
from .model.models import (
    ConfigError,
    DecoderLM,
    DecoderLMConfig,
    EncoderClassifier,
    EncoderClassifierConfig,
    EncoderDecoder,
    EncoderDecoderConfig,
    TransformerConfig,
)
from .model.trace import Trace, editing, recording
from .weights.hub import CheckpointError, CheckpointTooLarge, load_model, save_checkpoint
from .weights.gpt2 import GPT2ImportError, load_gpt2
from .weights.e5 import E5FormatError, load_e5

# 6. decode and sample: a language model writes on; an encoder-decoder translates a toy task
from .decoding.generation import generate, next_token_logits, stream
from .decoding.sampling import Sampler, SamplingConfig, SamplingError, StepRecord
from .decoding.beam import BeamResult, beam_search_lm
from .decoding.seq2seq import Codec, DecodingError, Translation, exact_match, translate
from .tasks import TASKS, TOY_TASKS, Task, TaskError, get_task

# 7. look inside: readouts (losses, predictions, attention rollout), what a head does, why a classifier decides,
# whole documents sentence by sentence
from .analysis.readouts import (
    GenerationAttention,
    attention_of_each,
    attention_rollout,
    attention_while_generating,
    greedy_with_mask,
    mean_loss,
    token_losses,
    top_predictions,
)
from .analysis.heads import (
    HEAD_NAME,
    ROLE_THRESHOLD,
    ROLES,
    SWITCH_OFF_MODES,
    Head,
    HeadError,
    HeadRanking,
    HeadRoles,
    ImportanceMap,
    LogitLens,
    all_heads,
    attention_layers,
    head_means,
    head_roles,
    importance_map,
    logit_lens,
    rank_attention,
    rank_by,
    rank_heads,
    repeated_random_tokens,
    switch_off,
)
from .analysis.sentiment import EmptyTextError, Verdict, explain, explain_each, log_odds_shares, predict_proba
from .analysis.documents import (
    DocumentVerdict,
    Notice,
    Sentences,
    SentenceVerdict,
    read_document,
    reads_by_sentences,
    sentence_log_odds,
    split_sentences,
)

__all__ = [
    # where it runs
    "DeviceError", "default_device", "device_of",
    # 1. tokenize
    "BpeTraining", "MergeStep", "TextTokenizer", "TokenizerError", "TokenSpan", "sanitize", "train_bpe_steps",
    "to_simplified",
    # 2. embed
    "Embeddings", "SequenceTooLongError", "sinusoidal_encoding",
    # 3. attend
    "MASK_KINDS", "Mask", "MaskError", "build_mask", "causal_mask", "dilated_window_mask", "global_window_mask",
    "no_mask", "padding_mask", "sliding_window_mask", "MultiHeadAttention", "attend",
    # 4. a block
    "Block", "FeedForward",
    # 5. models, trace, checkpoints
    "ConfigError", "DecoderLM", "DecoderLMConfig", "EncoderClassifier", "EncoderClassifierConfig", "EncoderDecoder",
    "EncoderDecoderConfig", "TransformerConfig", "Trace", "editing", "recording",
    "CheckpointError", "CheckpointTooLarge", "load_model", "save_checkpoint", "GPT2ImportError", "load_gpt2", "E5FormatError", "load_e5",
    # 6. decode and sample
    "generate", "next_token_logits", "stream", "Sampler", "SamplingConfig", "SamplingError", "StepRecord",
    "BeamResult", "beam_search_lm", "Codec", "DecodingError", "Translation", "exact_match", "translate",
    "TASKS", "TOY_TASKS", "Task", "TaskError", "get_task",
    # 7. look inside
    "GenerationAttention", "attention_of_each", "attention_rollout", "attention_while_generating", "greedy_with_mask", "mean_loss",
    "token_losses", "top_predictions",
    "HEAD_NAME", "ROLE_THRESHOLD", "ROLES", "SWITCH_OFF_MODES", "Head", "HeadError", "HeadRanking", "HeadRoles",
    "ImportanceMap",
    "LogitLens", "all_heads", "attention_layers", "head_means", "head_roles", "importance_map",
    "logit_lens", "rank_attention", "rank_by", "rank_heads", "repeated_random_tokens", "switch_off",
    "EmptyTextError", "Verdict", "explain", "explain_each", "log_odds_shares", "predict_proba",
    "DocumentVerdict", "Notice", "Sentences", "SentenceVerdict", "read_document", "reads_by_sentences",
    "sentence_log_odds", "split_sentences",
]
