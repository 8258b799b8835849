"""The one error of configuration."""


class SettingsError(Exception):
    """A setting or a settings file is wrong; the message says how to fix it."""
