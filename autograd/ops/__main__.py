"""``python -m tritongrad.autograd.ops [--check]``: writes the op list of docs/ops.md from the
op tables (or, with --check, exits 1 if the page is stale)."""

from __future__ import annotations

import pathlib
import sys

from .. import registry
from . import FAMILIES

BEGIN = "<!-- op list: generated from the op tables by `python -m tritongrad.autograd.ops` -->"
END = "<!-- end of the generated op list -->"


def render(page: str) -> str:
    """``page`` with the text between BEGIN and END replaced by the current op list."""
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n\n{registry.markdown(FAMILIES)}\n{END}{tail}"


def main(argv: list[str]) -> int:
    path = pathlib.Path(argv[argv.index("--page") + 1]) if "--page" in argv else \
        pathlib.Path(__file__).resolve().parents[2] / "docs" / "ops.md"
    page = path.read_text()
    new = render(page)
    if "--check" in argv:
        if new != page:
            print(f"{path} is stale: run python -m tritongrad.autograd.ops", file=sys.stderr)
            return 1
        return 0
    path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
