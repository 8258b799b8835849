"""A QR code drawn with text: the funding checkout's address, so a phone can open it, on the
wallet screen and from `svc-console wallet fund` alike.

Two rows of modules share one terminal row (upper and lower half blocks), so a version 4 code
(33 modules, the size of a checkout address) takes 18 rows. A dark module is a drawn half: the
wallet screen and the CLI (on a terminal) draw the lines black on white whatever the theme, as
scanners expect dark modules on a light ground, and the light border is the quiet zone they look
for. Always a regular QR code (never a Micro QR, which phones seldom read).
"""

from __future__ import annotations

import segno

# Both halves, the upper, the lower, neither: indexed by (top dark, bottom dark).
_BLOCKS = {(True, True): "█", (True, False): "▀", (False, True): "▄", (False, False): " "}


def qr_lines(data: str, *, border: int = 1) -> list[str]:
    """The code as lines of half blocks (a dark module is a drawn half)."""
    code = segno.make_qr(data, error="l", boost_error=True)
    rows = [[bool(module) for module in row] for row in code.matrix_iter(border=border)]
    if len(rows) % 2:
        rows.append([False] * len(rows[0]))
    return [
        "".join(_BLOCKS[top, bottom] for top, bottom in zip(upper, lower, strict=True))
        for upper, lower in zip(rows[::2], rows[1::2], strict=True)
    ]
