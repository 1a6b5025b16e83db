"""A policy's value defaults, for the kinds whose policy holds them (issue 32): a training's, a workspace's
and an inference's flat ``defaults``, a distributed inference's ``defaults.leader`` and ``defaults.worker``.

Run:ai's policy of such a kind holds a spec-shaped mapping of value defaults (``defaults: {backoffLimit: 3,
compute: {cpuCoreRequest: 1}}``) beside the attribute defaults of its keyed lists
(:mod:`~template_engine.policy.attribute_defaults` splits the two).  They are checked here against the spec
model of the kind's role, as a template's spec is: a field the role does not have is told with the kind, and
the kinds that have it.  A distributed training's value defaults are the scope's ``defaults.yaml``, never
its policy's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from template_engine.errors import Problem, Replica
from template_engine.kinds import KINDS, WorkloadKind
from template_engine.loader.validate import key_problems, locate, validate
from template_engine.merge.plan import models_in
from template_engine.paths import Path
from template_engine.suggest import closest, did_you_mean


def value_default_problems(
    kind: WorkloadKind,
    role: Replica,
    values: Mapping[str, Any],
    root: Path,
    file: str,
    lines: Mapping[Path, tuple[int, int]],
) -> list[Problem]:
    """Every problem of ``values`` (the value defaults of ``role``, at ``root`` of ``file``) as a spec of the
    role: each field the role lacks (with the kind), then the spec model's and the keyed lists' problems of
    the rest."""
    model = kind.spec_models[role]
    unknown: list[Problem] = []
    known = _known(kind, model, values, (), unknown, file, lines, root)
    shifted = _Shifted(lines, root)
    _, problems = validate(model, known, file, shifted)
    found = [*unknown, *(replace(p, path=(*root, *p.path)) for p in problems)]
    if not problems:
        found += key_problems(kind.plan(role), known, root, file, lines)
    return found


def _known(
    kind: WorkloadKind,
    model: type[BaseModel],
    data: Mapping[str, Any],
    at: Path,
    unknown: list[Problem],
    file: str,
    lines: Mapping[Path, tuple[int, int]],
    root: Path,
) -> dict[str, Any]:
    """``data`` without the fields ``model`` lacks (each a problem in ``unknown``), at every depth."""
    out: dict[str, Any] = {}
    for name, value in data.items():
        here: Path = (*at, name)
        info = model.model_fields.get(str(name))
        if info is None:
            field_path = tuple(str(p) for p in here if isinstance(p, str))
            hint = did_you_mean(closest(str(name), model.model_fields))
            full = (*root, *here)
            note = kind_note(kind, field_path, kinds_with_field)
            if not at and not kind.roled_policy and name in {r for k in KINDS for r in k.roles}:
                note = flat_note(kind)
                hint = ""
            unknown.append(
                Problem(
                    f"unknown field for defaults {name!r}{hint}: {note}",
                    full,
                    locate(file, lines, full),
                    "one of: " + ", ".join(sorted(model.model_fields)),
                )
            )
            continue
        inner = models_in(info.annotation)
        if inner and isinstance(value, Mapping):
            out[name] = _known(kind, inner[0], value, here, unknown, file, lines, root)
        elif inner and isinstance(value, list):
            out[name] = [
                _known(kind, inner[0], item, (*here, index), unknown, file, lines, root)
                if isinstance(item, Mapping)
                else item
                for index, item in enumerate(value)
            ]
        else:
            out[name] = value
    return out


class _Shifted(Mapping[Path, tuple[int, int]]):
    """``lines`` seen from ``root``: the position of ``path`` is that of ``(*root, *path)``."""

    def __init__(self, lines: Mapping[Path, tuple[int, int]], root: Path) -> None:
        self.lines = lines
        self.root = root

    def __getitem__(self, path: Path) -> tuple[int, int]:
        return self.lines[(*self.root, *path)]

    def __iter__(self) -> Iterator[Path]:
        size = len(self.root)
        return (path[size:] for path in self.lines if path[:size] == self.root)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _model_has(model: type[BaseModel], field_path: tuple[str, ...]) -> bool:
    current: type[BaseModel] | None = model
    for name in field_path:
        if current is None or name not in current.model_fields:
            return False
        inner = models_in(current.model_fields[name].annotation)
        current = inner[0] if inner else None
    return True


def kinds_with_field(field_path: tuple[str, ...]) -> tuple[WorkloadKind, ...]:
    """The kinds a spec of one of whose roles has the field at ``field_path``."""
    return tuple(k for k in KINDS if any(_model_has(m, field_path) for m in k.spec_models.values()))


def flat_note(kind: WorkloadKind) -> str:
    """What a role named in a one-role kind's policy is told: the policy is flat."""
    noun = kind.noun
    return f"{_article(noun)} {noun}'s policy is flat, without roles (Run:ai's {kind.policy_type} policy)"


def kind_note(
    kind: WorkloadKind,
    field_path: tuple[str, ...],
    having: Callable[[tuple[str, ...]], tuple[WorkloadKind, ...]],
) -> str:
    """``a training has no such field (a distributed training has it)``: what a field unknown in ``kind``'s
    policy is, and which other kinds have it (``having``: the kinds with a field path, by spec models or by
    rule vocabulary)."""
    others = [k.noun for k in having(field_path) if k.name != kind.name]
    note = f"{_article(kind.noun)} {kind.noun} has no such field"
    if not others:
        return note
    named = [f"{_article(n)} {n}" for n in others]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return f"{note} ({listed} {'has' if len(named) == 1 else 'have'} it)"


def _article(word: str) -> str:
    return "an" if word[:1] in ("a", "e", "i", "o", "u") else "a"


__all__ = ["flat_note", "kind_note", "kinds_with_field", "value_default_problems"]
