"""Configuration: where svc-console keeps its state, which service it speaks to, its secrets and
its log. Read from the environment and `settings.toml`; nothing here talks to the network."""
