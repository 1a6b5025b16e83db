"""Entity tags and ``If-Match`` as RFC 9110 defines them (sections 8.8.3 and 13.1.1), for every route that
takes the header.

The service sends strong tags of a resource's version (``"3"``).  A client may send any well-formed
``If-Match``: ``*``, or a list of entity tags, each an opaque tag in double quotes (``etagc``: ``!`` and
``#`` to ``~``, and bytes 0x80 to 0xFF), possibly weak (``W/"3"``), separated by commas with optional
whitespace (empty list elements are ignored, as RFC 9110 section 5.6.1.2 asks).  A well-formed header is
compared, never refused: ``If-Match`` uses the *strong* comparison, so a tag matches only when neither it
nor the current one is weak and their opaque tags are equal character by character (``"03"`` is not
``"3"``, ``W/"3"`` matches nothing).  A header that is not of that grammar is a 400 (:data:`IF_MATCH_PATTERN`
is the grammar, for the OpenAPI document and for the check).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from template_engine.errors import Problem
from template_engine.service.errors import ApiError, bad_request
from template_engine.service.schemas import IF_MATCH_PATTERN, IF_MATCH_TAG, PATTERN_RULES

_TAG = re.compile(IF_MATCH_TAG)


@dataclass(frozen=True, slots=True)
class EntityTag:
    """One entity tag: its opaque tag (without the quotes) and whether it is weak."""

    opaque: str
    weak: bool = False

    def __str__(self) -> str:
        return f'{"W/" if self.weak else ""}"{self.opaque}"'

    def strongly_matches(self, other: EntityTag) -> bool:
        """RFC 9110's strong comparison: both strong, opaque tags equal."""
        return not self.weak and not other.weak and self.opaque == other.opaque


@dataclass(frozen=True, slots=True)
class IfMatch:
    """A well-formed ``If-Match``: ``*`` (any current representation), or the tags it lists."""

    any: bool
    tags: tuple[EntityTag, ...] = ()

    def holds(self, current: EntityTag) -> bool:
        """Whether a resource whose current tag is ``current`` passes the precondition."""
        return self.any or any(tag.strongly_matches(current) for tag in self.tags)


def version_tag(version: int) -> EntityTag:
    """The strong tag the service sends for a resource's ``version``."""
    return EntityTag(str(version))


def parse_if_match(header: str) -> IfMatch | None:
    """``header`` as an ``If-Match``; ``None`` when it is not of RFC 9110's grammar."""
    if re.fullmatch(IF_MATCH_PATTERN, header) is None:
        return None
    if header.strip(" \t") == "*":
        return IfMatch(any=True)
    return IfMatch(
        any=False, tags=tuple(EntityTag(m["opaque"], bool(m["weak"])) for m in _TAG.finditer(header))
    )


__all__ = ["EntityTag", "IfMatch", "parse_if_match", "version_tag"]


def etag(version: int) -> str:
    return str(version_tag(version))


def check_if_match(header: str | None, version: int) -> None:
    """``If-Match`` must hold for the current version (:mod:`..etags`: RFC 9110's grammar and strong
    comparison; ``*`` always holds); a 412 with the current ETag when it does not.  The header's grammar is
    checked before the handler runs (:data:`IfMatch`); one that does not follow it is a 400 here too, for a
    caller that did not."""
    if header is None:
        return
    precondition = parse_if_match(header)
    if precondition is None:
        rule = PATTERN_RULES[IF_MATCH_PATTERN]
        raise bad_request([Problem(f"header parameter: {rule} (got {header[:40]!r})", ("If-Match",))])
    if precondition.holds(version_tag(version)):
        return
    raise ApiError(
        412,
        f"If-Match does not match the current version {etag(version)}; read the resource again.",
        headers={"ETag": etag(version)},
    )
