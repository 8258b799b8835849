"""Endpoint records as the ledger writes and reads them, each kept once made.

Agents ask for the same few endpoints over and over, and every request's row holds its endpoint's
record (about 800 bytes of JSON): written when intake inspects the request, then read back several
times on the request's path (intake's verdict, the broker's listeners, `spend.get`) and on every
page a screen shows. Decoding and validating that JSON was about a third of reading a request, and
dumping it most of writing the inspection.

So the text written for a record object is kept (intake's endpoint cache hands out one object per
endpoint for minutes), and so is the record read from a text. A record is frozen, so callers can
share one; the text is the same canonical JSON the audit chain seals, as before.
"""

from __future__ import annotations

import json

from svc_console.core.canonical_json import canonical_json
from svc_console.core.models import EndpointRecord

KEPT_MAX = 512  # far more endpoints than a burst of requests names; emptied when full

# id(record) -> (record, its text): the record is held so that its id is not given to another.
_texts: dict[int, tuple[EndpointRecord, str]] = {}
_records: dict[str, EndpointRecord] = {}


def text_of(record: EndpointRecord) -> str:
    """The record as the ledger's column holds it."""
    kept = _texts.get(id(record))
    if kept is not None:  # held there, so no other object can have its id
        return kept[1]
    text = canonical_json(record.model_dump(mode="json"))
    if len(_texts) >= KEPT_MAX:
        _texts.clear()
    _texts[id(record)] = (record, text)
    return text


def record_of(text: str) -> EndpointRecord:
    """The record a column's text holds."""
    found = _records.get(text)
    if found is None:
        found = EndpointRecord.model_validate(json.loads(text))
        if len(_records) >= KEPT_MAX:
            _records.clear()
        _records[text] = found
    return found
