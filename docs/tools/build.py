"""`make docs`, before MkDocs: writes afresh the guide's pages taken from the code, and its
pictures. Each writer is also what its test compares the committed file with."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cli_reference
import skills_reference


def main() -> int:
    for module in (cli_reference, skills_reference):
        module.PAGE.write_text(module.render())
        print(f"wrote {module.PAGE.relative_to(Path.cwd())}")
    if "--no-pictures" not in sys.argv:
        import pictures

        for path in pictures.write_all():
            print(f"wrote {path.relative_to(Path.cwd())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
