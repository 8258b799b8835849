"""A QR code drawn with text: the funding checkout's address, so a phone can open it.

Two rows of modules share one terminal row (upper and lower half blocks), so a version 4 code
(33 modules, the size of a checkout address) takes 18 rows. It is always black on white,
whatever the theme: scanners expect dark modules on a light ground, and the white border is the
quiet zone they look for. Always a regular QR code (never a Micro QR, which phones seldom read).
"""

from __future__ import annotations

import segno
from rich.text import Text
from textual.widgets import Static

QR_STYLE = "#000000 on #ffffff"
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


def qr_text(data: str, *, border: int = 1) -> Text:
    return Text("\n".join(qr_lines(data, border=border)), style=QR_STYLE, no_wrap=True)


class QrCode(Static):
    """The QR code of one address, or nothing."""

    DEFAULT_CSS = """
    QrCode { width: auto; height: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.data: str | None = None

    def show(self, data: str | None) -> None:
        if data == self.data:
            return
        self.data = data
        self.update(qr_text(data) if data else "")
        self.display = data is not None
