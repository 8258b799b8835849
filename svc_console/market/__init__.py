"""Typed httpx clients of the marketplace: the REST surface and the agent wallet proxy.

Error bodies everywhere have the shape `{"error": {"code": WORD, "message": TEXT, ...details}}`;
each code maps to one exception in `market.errors`, so callers never read status codes.
"""
