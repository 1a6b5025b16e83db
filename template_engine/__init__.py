"""Compose layered Run:ai-style defaults, assets and templates into effective distributed-training specs.

The names below are imported on first use (PEP 562), not with the package: ``template-engine --version``
and ``--help`` import ``template_engine.cli``, and so this package, and must not pay for the models and the
merge plan that ``compose`` needs (docs/performance.md).  ``from template_engine import compose`` works as
before; ``tests/test_cli_startup.py`` checks that every name resolves and what a bare import loads.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from template_engine.cluster.mapping import Manifests
    from template_engine.cluster_objects import manifests
    from template_engine.compose import Composition, compose
    from template_engine.errors import (
        CompositionError,
        CompositionWarning,
        InputError,
        Location,
        NotFoundError,
        Problem,
        RenderError,
        TemplateEngineError,
        WarningKind,
    )
    from template_engine.explain import explain
    from template_engine.layers import Submission
    from template_engine.loader.tree import load_org, reference_problems
    from template_engine.org import Org, Scope, Template, View
    from template_engine.paths import Match, format_path, parse_path

#: Each public name and the module it comes from.
_FROM: dict[str, str] = {
    "Manifests": "template_engine.cluster.mapping",
    "manifests": "template_engine.cluster_objects",
    "Composition": "template_engine.compose",
    "compose": "template_engine.compose",
    "CompositionError": "template_engine.errors",
    "CompositionWarning": "template_engine.errors",
    "InputError": "template_engine.errors",
    "Location": "template_engine.errors",
    "NotFoundError": "template_engine.errors",
    "Problem": "template_engine.errors",
    "RenderError": "template_engine.errors",
    "TemplateEngineError": "template_engine.errors",
    "WarningKind": "template_engine.errors",
    "explain": "template_engine.explain",
    "Submission": "template_engine.layers",
    "load_org": "template_engine.loader.tree",
    "reference_problems": "template_engine.loader.tree",
    "Org": "template_engine.org",
    "Scope": "template_engine.org",
    "Template": "template_engine.org",
    "View": "template_engine.org",
    "Match": "template_engine.paths",
    "format_path": "template_engine.paths",
    "parse_path": "template_engine.paths",
}

__all__ = [
    "Composition",
    "CompositionError",
    "CompositionWarning",
    "InputError",
    "Location",
    "Manifests",
    "Match",
    "NotFoundError",
    "Org",
    "Problem",
    "RenderError",
    "Scope",
    "Submission",
    "Template",
    "TemplateEngineError",
    "View",
    "WarningKind",
    "compose",
    "explain",
    "format_path",
    "load_org",
    "manifests",
    "parse_path",
    "reference_problems",
]


def __getattr__(name: str) -> Any:
    module = _FROM.get(name)
    if module is None:
        raise AttributeError(f"module 'template_engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM))


def _function_over_module(name: str) -> property:
    """``compose`` and ``explain`` name a function and a submodule at once.  Importing the submodule binds
    its name on the package (Python's import system does, whoever imports it); this keeps the package's
    name the function, as the eager ``from template_engine.compose import compose`` used to."""

    def get(package: types.ModuleType) -> Any:
        found = package.__dict__.get(name)
        if found is None or isinstance(found, types.ModuleType):
            found = getattr(importlib.import_module(_FROM[name]), name)
            package.__dict__[name] = found
        return found

    def bind(package: types.ModuleType, value: Any) -> None:
        if not isinstance(value, types.ModuleType):
            package.__dict__[name] = value

    return property(get, bind)


class _Package(types.ModuleType):
    compose = _function_over_module("compose")
    explain = _function_over_module("explain")


sys.modules[__name__].__class__ = _Package
