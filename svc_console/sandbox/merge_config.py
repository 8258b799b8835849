"""The model-merge configuration `merge_models` takes as `config_yaml`: the sandbox's minimal,
mergekit-like schema, read with pyyaml and checked before any payment is asked for, so a broken
configuration costs nothing (JSON-RPC -32602 naming `config_yaml` and the problem).
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import Field, ValidationError, field_validator

from svc_console.sandbox.queries import Arguments

MERGE_METHODS = (
    "linear",
    "slerp",
    "ties",
    "dare_ties",
    "dare_linear",
    "task_arithmetic",
    "della",
    "model_stock",
    "passthrough",
)
_NEEDS_BASE = {
    "slerp",
    "ties",
    "dare_ties",
    "dare_linear",
    "task_arithmetic",
    "della",
    "model_stock",
}
_MODEL_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$"
MAX_MERGE_MODELS = 16


def _number_or_list(name: str, value: Any) -> None:
    def number(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool)

    if number(value) or isinstance(value, bool):
        return
    if isinstance(value, list) and value and all(number(v) for v in value):
        return
    raise ValueError(f"{name} must be a number, true/false or a list of numbers")


class MergeModel(Arguments):
    model: str = Field(pattern=_MODEL_NAME, max_length=200)
    parameters: dict[str, Any] = Field(default_factory=dict)

    @field_validator("parameters")
    @classmethod
    def _parameters(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key, item in value.items():
            _number_or_list(f"parameters.{key}", item)
        return value


class MergeConfig(Arguments):
    """`config_yaml` of merge_models, parsed."""

    merge_method: str
    models: list[MergeModel] = Field(min_length=1, max_length=MAX_MERGE_MODELS)
    base_model: str | None = Field(None, pattern=_MODEL_NAME, max_length=200)
    parameters: dict[str, Any] = Field(default_factory=dict)
    dtype: str = "bfloat16"

    @field_validator("merge_method")
    @classmethod
    def _method(cls, value: str) -> str:
        if value not in MERGE_METHODS:
            raise ValueError("must be one of " + ", ".join(MERGE_METHODS))
        return value

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, value: str) -> str:
        if value not in ("float16", "bfloat16", "float32"):
            raise ValueError("must be float16, bfloat16 or float32")
        return value

    @field_validator("parameters")
    @classmethod
    def _parameters(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key, item in value.items():
            _number_or_list(f"parameters.{key}", item)
        return value

    def check(self) -> None:
        count = len(self.models)
        if self.merge_method in _NEEDS_BASE and not self.base_model:
            raise ValueError(f"merge_method {self.merge_method} needs base_model")
        if self.merge_method == "slerp" and count != 2:
            raise ValueError("slerp merges exactly 2 models")
        if self.merge_method != "passthrough" and count < 2 and not self.base_model:
            raise ValueError(f"{self.merge_method} needs at least 2 models")


def parse_merge_config(text: str) -> MergeConfig:
    """Parses and checks `config_yaml`; raises ValueError with a line or a field name."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "unreadable"
        raise ValueError(f"is not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise ValueError("must be a YAML mapping with merge_method and models")
    try:
        config = MergeConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(config)"
        raise ValueError(f"{where}: {_problem(first)}") from None
    config.check()
    return config


def _problem(error: Any) -> str:
    if error.get("type") == "value_error":
        return str(error.get("msg", "")).removeprefix("Value error, ")
    return str(error.get("msg", "is not valid")).lower()
