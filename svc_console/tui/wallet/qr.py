"""The QR code widget of the wallet screen: the funding checkout's address, so a phone can open
it. The lines are `services.qr.qr_lines`; here they are always black on white, whatever the
theme: scanners expect dark modules on a light ground, and the white border is the quiet zone
they look for.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from svc_console.services.qr import qr_lines

QR_STYLE = "#000000 on #ffffff"


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
