"""svc-console: the operator's spend governor for agents on the Agent Data and API Marketplace.

Kept empty of imports on purpose: `svc-console --help` and the agent client must start fast.
"""

__version__ = "0.1.0"
