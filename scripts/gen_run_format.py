"""Write docs/run-format.md: the reference of a run folder's files, fields and tables.

python scripts/gen_run_format.py            # write it
python scripts/gen_run_format.py --check    # exit 1 when it is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

from toolproof.export._reference import generate

PAGE = Path(__file__).resolve().parents[1] / "docs" / "run-format.md"


def main(argv: list[str]) -> int:
    text = generate()
    if "--check" in argv:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE} is stale: run python scripts/gen_run_format.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
