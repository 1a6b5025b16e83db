"""Compose layered Run:ai-style defaults, assets and templates into effective distributed-training specs."""

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
