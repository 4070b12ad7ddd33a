"""transformer_core: one inspectable transformer that every Transformer Lab tab runs on."""

from .analysis.probes import (
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
    ABLATIONS,
    ROLE_THRESHOLD,
    ROLES,
    Head,
    HeadError,
    HeadRanking,
    HeadRoles,
    ImportanceMap,
    LogitLens,
    ablating,
    all_heads,
    attention_layers,
    head_means,
    head_roles,
    importance_map,
    logit_lens,
    rank_heads,
    repeated_random_tokens,
)
from .model.attention import MultiHeadAttention, attend
from .model.cache import KVCache, LayerCache
from .decoding.beam import BeamResult, beam_search, beam_search_lm, decoder_lm_step, encoder_decoder_step
from .weights.bert import BertImportError, bert_config, encoder_classifier_from_bert, load_bert
from .training.data import (
    SPLITS,
    DataError,
    Review,
    data_dir,
    hub_text,
    imdb_reviews,
    local_text,
    minilm,
    movie_reviews,
    other_snippets,
    shakespeare,
    shakespeare_works,
    split_text,
)
from .device import DeviceError, autocast, default_device, device_of
from .training.distill import augment, teacher_probs, transfer_texts, wordpiece_ids
from .decoding.generation import context_window, generate, greedy_choice, next_token_logits, stream
from .weights.gpt2 import GPT2ImportError, decoder_lm_from_gpt2, gpt2_config, load_gpt2
from .weights.hub import CheckpointError, load_model, save_checkpoint
from .model.layers import Block, Embeddings, FeedForward, SequenceTooLongError, sinusoidal_encoding
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
from .tokenization import (
    CLASSIFIER_SPECIAL_TOKENS,
    CLS,
    END_OF_TEXT,
    LANGUAGE_MODEL_SPECIAL_TOKENS,
    MASK,
    PAD,
    UNKNOWN,
    BpeTraining,
    MergeStep,
    TextTokenizer,
    TokenizerError,
    TokenSpan,
    sanitize,
    train_bpe_steps,
    train_byte_level_bpe,
    train_char_level,
)
from .decoding.sampling import Sampler, SamplingConfig, SamplingError, StepRecord
from .decoding.seq2seq import Codec, DecodingError, Translation, exact_match, translate
from .training.tasks import TASKS, Task, TaskError, get_task, pig_latin
from .analysis.sentiment import EmptyTextError, Verdict, explain, explain_each, gradient_x_input, predict_proba
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
from .model.trace import Trace, intervening, recording
from .training.loop import TrainConfig, evaluate, learning_rate, train
from .training.word_vectors import WordVectorError, cooccurrence, ppmi, ppmi_vectors

__all__ = [
    "BeamResult", "Sampler", "SamplingConfig", "SamplingError", "StepRecord", "beam_search", "beam_search_lm",
    "decoder_lm_step", "encoder_decoder_step",
    "Block", "CheckpointError", "ConfigError", "DecoderLM", "DecoderLMConfig", "DeviceError", "Embeddings",
    "EncoderClassifier", "EncoderClassifierConfig", "EncoderDecoder", "EncoderDecoderConfig",
    "FeedForward", "GPT2ImportError", "KVCache", "LayerCache", "MASK_KINDS", "Mask", "MaskError",
    "MultiHeadAttention", "SequenceTooLongError", "Trace", "TransformerConfig", "attend", "autocast",
    "build_mask", "causal_mask", "context_window", "decoder_lm_from_gpt2", "default_device", "device_of",
    "dilated_window_mask",
    "generate", "global_window_mask", "gpt2_config", "greedy_choice", "load_gpt2", "load_model",
    "next_token_logits", "no_mask", "padding_mask", "recording", "save_checkpoint",
    "sinusoidal_encoding", "sliding_window_mask", "stream",
    # analysis (attention rollout, per-token loss, attention while generating)
    "GenerationAttention", "attention_of_each", "attention_rollout", "attention_while_generating", "greedy_with_mask", "mean_loss",
    "token_losses", "top_predictions",
    # data
    "SPLITS", "DataError", "Review", "data_dir", "hub_text", "imdb_reviews", "local_text", "minilm", "movie_reviews",
    "other_snippets", "shakespeare", "shakespeare_works", "split_text",
    # BERT import and distillation (a pre-trained encoder teaches the sentiment classifier)
    "BertImportError", "augment", "bert_config", "encoder_classifier_from_bert", "load_bert", "teacher_probs",
    "transfer_texts", "wordpiece_ids",
    # tokenization
    "CLASSIFIER_SPECIAL_TOKENS", "CLS", "END_OF_TEXT", "LANGUAGE_MODEL_SPECIAL_TOKENS", "MASK", "PAD", "UNKNOWN",
    "BpeTraining", "MergeStep", "TextTokenizer", "TokenizerError", "TokenSpan", "sanitize", "train_bpe_steps",
    "train_byte_level_bpe", "train_char_level",
    # training
    "TrainConfig", "evaluate", "learning_rate", "train",
    # word vectors (PPMI + SVD, an embedding init from unlabelled text)
    "WordVectorError", "cooccurrence", "ppmi", "ppmi_vectors",
    # translation (encoder-decoder tasks)
    "Codec", "DecodingError", "TASKS", "Task", "TaskError", "Translation", "exact_match", "get_task", "pig_latin",
    "translate",
    # sentiment
    "EmptyTextError", "Verdict", "explain", "explain_each", "gradient_x_input", "predict_proba",
    # what a head does: find the head behind a link, switch heads off, the logit lens, head roles
    "ABLATIONS", "ROLES", "ROLE_THRESHOLD", "Head", "HeadError", "HeadRanking", "HeadRoles", "ImportanceMap",
    "LogitLens", "ablating", "all_heads", "attention_layers", "head_means", "head_roles", "importance_map",
    "intervening", "logit_lens", "rank_heads", "repeated_random_tokens",
    # whole documents, sentence by sentence
    "DocumentVerdict", "Notice", "SentenceVerdict", "Sentences", "read_document", "reads_by_sentences",
    "sentence_log_odds", "split_sentences",
]
