"""A local, real-HTTP implementation of the marketplace of SPEC.md, for tests, the demo and the
embedded sandbox; it never moves real money.

What it serves and every choice made where SPEC.md is silent: docs/sandbox.md. Nothing is imported
here, so importing the package stays cheap; use `sandbox.server`, `sandbox.state`, `sandbox.app`
and `sandbox.catalog` directly.
"""
