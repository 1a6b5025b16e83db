"""Documents read when first needed: the org's entries for files already known to be valid.

When the fact cache (:mod:`template_engine.loader.facts`) knows that a file, with exactly these bytes at this
place, makes a valid defaults, template or asset document, the loader does not parse it: the org gets a
stand-in that carries what the org's shape needs (scope, name, file, and for a template the assets it names)
and parses and validates the text the first time anything asks for the document (``source`` or ``doc``),
once.  Everything else sees a :class:`~template_engine.org.Defaults`, :class:`~template_engine.org.Template`
or :class:`~template_engine.org.Asset` like any other: a stand-in equals the entry it stands for.

So ``diff`` and ``impact`` parse only the files of the pairs they compose.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from template_engine.errors import TemplateEngineError
from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.models.documents import (
    AssetKind,
    ComputeAsset,
    DatasourceAsset,
    EnvironmentAsset,
    LayerDocument,
    TemplateDocument,
)
from template_engine.org import Asset, Defaults, Scope, Source, Template

#: Reads the file for real: the entry and its problems (none, for a file the cache knows to be valid).
Build = Callable[[], tuple[Any, list[Any]]]


class StaleFacts(RuntimeError):
    """A file the cache said was valid turned out not to be.

    The key and the rows' HMAC rule that out for this user's cache written by this code, so only a bug (or a
    dependency outside the fingerprint that changed what is valid) could cause it.  The org the stand-in is
    part of is then wrong (the file belongs in ``Org.broken``), so no answer may be made from it: ``diff``
    and ``impact`` catch it and answer again believing no row (``FactCache.recheck``), which also drops the
    wrong row.
    """

    def __init__(self, file: str, problems: list[Any]) -> None:
        super().__init__(f"{file}: the fact cache said valid, but it has problems: {problems}")
        self.file = file
        self.problems = problems


class SourceFailed(RuntimeError):
    """Reading a stand-in's file failed for a reason that is not the file's own (a revision's blob that git
    cannot give): not a problem of the document, which composing would report as the pair's, but an error of
    the command, which ``diff`` and ``impact`` report as when loading (exit status 2)."""

    def __init__(self, error: TemplateEngineError) -> None:
        super().__init__(error.render())
        self.error = error


class _Deferred:
    """What the three stand-ins share: the entry made on first use, equality and hashing through it."""

    __slots__ = ()
    _build: Build | None
    _made: Any
    _file: str

    def _full(self) -> Any:
        made = self._made
        if made is None:
            assert self._build is not None
            try:
                made, problems = self._build()
            except TemplateEngineError as exc:
                raise SourceFailed(exc) from None
            if made is None:
                raise StaleFacts(self._file, problems)
            object.__setattr__(self, "_made", made)
            object.__setattr__(self, "_build", None)  # the text is no longer needed
        return made

    @property
    def loaded(self) -> bool:
        """Whether the document has been read (for tests: what was parsed)."""
        return self._made is not None

    @property
    def file(self) -> str:
        return self._file

    @property
    def source(self) -> Source:
        found: Source = self._full().source
        return found

    def __eq__(self, other: object) -> bool:
        full = other._full() if isinstance(other, _Deferred) else other
        return bool(self._full() == full)

    def __hash__(self) -> int:
        return hash(self._full())

    def __repr__(self) -> str:
        return f"deferred {self._file} ({'read' if self._made is not None else 'not read'})"


def _init(entry: _Deferred, file: str, build: Build, **fields: Any) -> None:
    for name, value in fields.items():
        object.__setattr__(entry, name, value)
    object.__setattr__(entry, "_file", file)
    object.__setattr__(entry, "_build", build)
    object.__setattr__(entry, "_made", None)


class DeferredDefaults(_Deferred, Defaults):  # properties stand in for the fields
    __slots__ = ("_build", "_file", "_made")

    def __init__(self, scope: Scope, file: str, build: Build) -> None:
        _init(self, file, build, scope=scope)

    @property
    def doc(self) -> LayerDocument:
        found: LayerDocument = self._full().doc
        return found


class DeferredTemplate(_Deferred, Template):  # properties stand in for the fields
    __slots__ = ("_build", "_file", "_kind", "_made", "_refs")

    def __init__(
        self,
        name: str,
        scope: Scope,
        file: str,
        refs: tuple[tuple[AssetKind, str], ...],
        build: Build,
        kind: WorkloadKind = DISTRIBUTED,
    ) -> None:
        _init(self, file, build, name=name, scope=scope, _refs=refs, _kind=kind)

    @property
    def kind(self) -> WorkloadKind:
        """The template's kind, as the facts cache remembers it (the file is not read for it)."""
        found: WorkloadKind = self._kind  # type: ignore[attr-defined]
        return found

    @property
    def doc(self) -> TemplateDocument:
        found: TemplateDocument = self._full().doc
        return found

    def asset_refs(self) -> tuple[tuple[AssetKind, str], ...]:
        refs: tuple[tuple[AssetKind, str], ...] = self._refs  # type: ignore[attr-defined]
        return refs


class DeferredAsset(_Deferred, Asset):  # properties stand in for the fields
    __slots__ = ("_build", "_file", "_made")

    def __init__(self, kind: AssetKind, name: str, file: str, scope: Scope, build: Build) -> None:
        _init(self, file, build, kind=kind, name=name, scope=scope)

    @property
    def doc(self) -> EnvironmentAsset | ComputeAsset | DatasourceAsset:
        found: EnvironmentAsset | ComputeAsset | DatasourceAsset = self._full().doc
        return found
