"""Publish Transformer Lab: the app as a Hugging Face Space, the checkpoints as a model repo.

    python -m tools.deploy --space USER/NAME [--dry-run]
    python -m tools.deploy --models USER/NAME [--dry-run]

A Space gets exactly what `python app.py` needs to run: the app, the three packages it
imports, the shipped checkpoints and screenshots, `requirements.txt` and the README (whose
front matter configures the Space). Tests, benchmarks, training runs and caches stay home.
A model repo gets one folder per checkpoint, the layout `python app.py --hub-repo` reads.

The token comes from the `HF_TOKEN` environment variable or a cached `hf auth login`;
huggingface_hub finds it, and it is never printed. `--dry-run` lists what would be
uploaded without touching the network.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from huggingface_hub import HfApi
from huggingface_hub.hf_api import DEFAULT_IGNORE_PATTERNS
from huggingface_hub.utils import filter_repo_objects

from transformer_core.weights.hub import CHECKPOINT_FILES

ROOT = Path(__file__).resolve().parent.parent

SPACE_ALLOW = [
    "app.py", "cli.py", "README.md", "LICENSE", "requirements.txt",
    "transformer_core/*.py", "lab/*.py", "ui/*.py", "views/*.py", "i18n/*.py", "i18n/*.json",
    "ui/*.js", "ui/*.css",  # the page's scripts and style (and plotly's zh-CN locale, ui/plotly/)
    "assets/*.json", "assets/*.safetensors", "assets/*.md", "assets/screenshots/*.png",
]
SPACE_IGNORE = ["*__pycache__*", "*.pyc"]
MODEL_ALLOW = [f"*/{name}" for name in CHECKPOINT_FILES]


class DeployError(Exception):
    """The upload could not start or finish; the message says why and what to do."""


def _matching(folder: Path, allow: list[str], ignore: list[str]) -> list[str]:
    """Relative paths under `folder` that upload_folder(allow_patterns, ignore_patterns) sends.

    The same listing and the same pattern filter as huggingface_hub's upload_folder, so a
    dry run shows the upload file for file.
    """
    files = sorted(p.relative_to(folder).as_posix() for p in folder.glob("**/*") if p.is_file())
    return list(filter_repo_objects(files, allow_patterns=allow, ignore_patterns=ignore + DEFAULT_IGNORE_PATTERNS))


def space_files(root: Path = ROOT) -> list[str]:
    """Every file a Space upload of the repository at `root` would send."""
    return _matching(root, SPACE_ALLOW, SPACE_IGNORE)


def model_files(assets: Path) -> list[str]:
    """Every file a model-repo upload of the checkpoint folders in `assets` would send."""
    return _matching(assets, MODEL_ALLOW, [])


def deploy_space(space_id: str, root: Path = ROOT, private: bool = False, api: HfApi | None = None) -> str:
    """Create (or reuse) the Gradio Space `space_id` and upload the app into it; return its URL."""
    if "README.md" not in space_files(root):
        raise DeployError(f"{root} has no README.md: a Space is configured by its front matter")
    api = api or HfApi()
    try:
        api.create_repo(space_id, repo_type="space", space_sdk="gradio", exist_ok=True, private=private)
        api.upload_folder(folder_path=str(root), repo_id=space_id, repo_type="space",
                          allow_patterns=SPACE_ALLOW, ignore_patterns=SPACE_IGNORE,
                          commit_message="Deploy Transformer Lab")
    except Exception as e:  # no token, no network, no permission: report the kind, never the token
        raise DeployError(_explain(space_id, e)) from e
    return f"https://huggingface.co/spaces/{space_id}"


def deploy_models(repo_id: str, assets: Path = ROOT / "assets", private: bool = False,
                  api: HfApi | None = None) -> str:
    """Upload every checkpoint folder in `assets` to the model repo `repo_id`; return its URL."""
    if not model_files(assets):
        raise DeployError(f"no checkpoint files in {assets} (looked for {', '.join(MODEL_ALLOW)})")
    api = api or HfApi()
    try:
        api.create_repo(repo_id, repo_type="model", exist_ok=True, private=private)
        api.upload_folder(folder_path=str(assets), repo_id=repo_id, repo_type="model",
                          allow_patterns=MODEL_ALLOW, commit_message="Transformer Lab checkpoints")
    except Exception as e:
        raise DeployError(_explain(repo_id, e)) from e
    return f"https://huggingface.co/{repo_id}"


def _explain(repo_id: str, error: Exception) -> str:
    return (f"could not upload to {repo_id!r}: {type(error).__name__}. Log in with `hf auth login` "
            "or set HF_TOKEN to a token with write access, and check your network connection.")


def _size(folder: Path, files: list[str]) -> str:
    return f"{sum((folder / f).stat().st_size for f in files) / 1e6:.1f} MB"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Publish Transformer Lab to the Hugging Face Hub.")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--space", help="USER/NAME of the Gradio Space to create or update")
    target.add_argument("--models", help="USER/NAME of a model repo for the shipped checkpoints")
    parser.add_argument("--private", action="store_true", help="create the repo private")
    parser.add_argument("--dry-run", action="store_true", help="list the files, upload nothing")
    args = parser.parse_args(argv)

    folder, files = (ROOT, space_files()) if args.space else (ROOT / "assets", model_files(ROOT / "assets"))
    print("\n".join(files))
    print(f"{len(files)} files, {_size(folder, files)}")
    if args.dry_run:
        return
    try:
        url = deploy_space(args.space, private=args.private) if args.space else deploy_models(
            args.models, private=args.private)
    except DeployError as e:
        sys.exit(f"error: {e}")
    print(url)


if __name__ == "__main__":
    main()
