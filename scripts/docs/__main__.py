"""``python -m scripts.docs --write`` regenerates every generated reference page;
``--check`` fails (exit status 1) when a committed page differs from its generator's output."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from scripts.docs import cli, metrics, rest, scripts
from scripts.docs.common import DOCS


def pages() -> dict[str, Callable[[], str]]:
    """Each generated page (its path under ``docs/``) and its generator."""
    from flinkish_cli.config import reference

    return {
        "configuration.md": reference.render,
        cli.PAGE: cli.render,
        rest.PAGE: rest.render,
        metrics.PAGE: metrics.render,
        scripts.PAGE: scripts.render,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.docs", description=__doc__)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--write", action="store_true", help="write every generated page")
    what.add_argument("--check", action="store_true", help="fail on a stale page")
    args = parser.parse_args(argv)
    stale = []
    for page, render in pages().items():
        path = DOCS / page
        text = render()
        if args.write:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
                print(f"wrote docs/{page}")
        elif not path.exists() or path.read_text(encoding="utf-8") != text:
            stale.append(page)
    for page in stale:
        print(f"docs/{page} is stale: run 'python -m scripts.docs --write'", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
