"""Typed messages: the only way news from the broker reaches widgets.

The broker calls its listeners synchronously from wherever a request changed; a listener only posts
one of these, and the screen that owns the state applies it in its own message loop.
"""

from __future__ import annotations

from textual.message import Message

from svc_console.core.models import SpendRequest


class RequestChanged(Message):
    """A spend request changed state (or was first seen): the queue and detail may need updating."""

    def __init__(self, request: SpendRequest) -> None:
        super().__init__()
        self.request = request
