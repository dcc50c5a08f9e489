#!/usr/bin/env python3
"""Write the standard two-line welcome greeting for one person.

Paths default to the workspace layout (input/, output/ under the current directory, which is
/workspace in an eval sandbox), so the script works wherever the workspace is mounted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SECOND_LINE = "Welcome aboard. We are glad you are here."


def greeting(name: str) -> str:
    """The greeting text for ``name`` (whitespace collapsed)."""
    clean = " ".join(name.split())
    if not clean:
        raise ValueError("the name is empty")
    return f"Hello, {clean}!\n{SECOND_LINE}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--name", help="the person's name")
    source.add_argument("--name-file", default="input/name.txt", help="file holding the name (default: input/name.txt)")
    parser.add_argument("--output", default="output/greeting.txt", help="where to write (default: output/greeting.txt)")
    args = parser.parse_args(argv)
    try:
        name = args.name if args.name is not None else Path(args.name_file).read_text(encoding="utf-8")
        text = greeting(name)
    except (OSError, ValueError) as exc:
        print(f"greet.py: {exc}", file=sys.stderr)
        return 2
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
