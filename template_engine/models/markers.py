"""Merge directives declared next to the models.

A list field annotated with :class:`MergeKey` merges item by item on that key; a field annotated with
:class:`ReplaceWhole` (or any other list) is replaced whole by the highest layer that sets it.  The merge
plan (``template_engine.merge.plan``) reads these markers from the models, so adding a keyed list is a
one-line change to a model.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MergeKey:
    """The identity key of a keyed list's items.

    ``fallback`` names the field that identifies an item that has no ``field`` (ports and exposed URLs fall
    back to ``container``, related URLs to ``url``).  Without a fallback the key is required.
    """

    field: str
    fallback: str | None = None


@dataclass(frozen=True, slots=True)
class ReplaceWhole:
    """A value replaced whole by the highest layer that sets it (scalar lists, ``nodeAffinityRequired``)."""
