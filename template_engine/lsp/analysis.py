"""The loaded org and each pair's outcome, recomposed only where a changed file reaches.

An :class:`Analysis` is one consistent state: the org as the editor saw it at one moment and, for every pair
(``diffing.pairs``), its dependencies (the files whose content decides what it composes to) and its
outcome.  :func:`analyse` makes the next state from the previous one the way ``diff``/``impact`` decide
what to compose (``diff.diff_orgs``): a pair whose view, dependencies and every dependency's document are
the same as before keeps its outcome; only the others are composed again.  The loader reuses the document
of every unchanged file (``tree._Reuse``, by content), so after an edit of a project's defaults only that
project's pairs are composed.

The work is a generator: it yields after each pair it composes, so the server can answer requests in
between and drop a recomputation that a newer edit made useless (:class:`Job`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from template_engine.compose import MergeCache
from template_engine.diffing.pairs import Outcome, Pair, compose_pair, dependencies, documents, same_document
from template_engine.diffing.pairs import pairs as org_pairs
from template_engine.errors import Problem
from template_engine.loader.tree import reference_problems
from template_engine.org import Org

__all__ = ["Analysis", "Job", "PairState", "analyse", "pair_name"]


def pair_name(pair: Pair) -> str:
    """``vision/vit-finetune``; a department's or the system's own view: ``(research)/tf-parameter-server``,
    ``(system)/mpi-horovod`` (as ``check`` shows the view)."""
    view = pair.view
    shown = view.project or (f"({view.department})" if view.department else "(system)")
    return f"{shown}/{pair.template.name}"


@dataclass(frozen=True, slots=True)
class PairState:
    """One pair: what it depends on and what it composed to."""

    pair: Pair
    deps: tuple[str, ...]
    outcome: Outcome

    @property
    def name(self) -> str:
        return pair_name(self.pair)


@dataclass(frozen=True, slots=True)
class Analysis:
    """The org and every pair's state, at one moment of the editor's buffers."""

    org: Org
    pairs: Mapping[str, PairState]
    #: What ``validate`` reports: every problem of the broken files, then the references.
    problems: tuple[Problem, ...] = ()
    #: The org's own warnings (layout, cluster settings).
    warnings: tuple[Problem, ...] = ()
    #: The pairs composed to make this state (the others kept the previous state's outcome).
    composed: tuple[str, ...] = ()
    #: Each file's users: the ids of the pairs that depend on it.
    users: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: What a pair's dependencies are read from besides its template (:func:`_structure`).
    structure: tuple[object, ...] = ()
    #: Every document of the org, by file (``diffing.pairs.documents``).
    documents: Mapping[str, Any] = field(default_factory=dict)

    def users_of(self, file: str) -> tuple[str, ...]:
        if file == "org.yaml":
            return tuple(self.pairs)
        return self.users.get(file, ())


def _problems(org: Org) -> tuple[Problem, ...]:
    """What ``validate`` reports of ``org`` (the CLI's ``org_problems``)."""
    return tuple(p for file in sorted(org.broken) for p in org.broken[file]) + tuple(reference_problems(org))


def _structure(org: Org) -> tuple[object, ...]:
    """What ``diffing.pairs.dependencies`` reads besides the pair's view and template: the file of each
    scope's defaults and policy, the data sources each policy imposes, the file of each asset.  Equal for
    two orgs, a pair with the same view and the same template document has the same dependencies."""
    return (
        tuple(sorted((str(scope), entry.file) for scope, entry in org.defaults.items())),
        tuple(
            sorted(
                (str(scope), policy.file, tuple(imposed.name for imposed in policy.imposed))
                for scope, policy in (
                    *org.policies.items(),
                    *((scope, policy) for (scope, _kind), policy in org.kind_policies.items()),
                )
            )
        ),
        tuple(
            sorted((kind, name, asset.file) for kind, by in org.assets.items() for name, asset in by.items())
        ),
    )


def _same_shape(previous: Analysis, org: Org, structure: tuple[object, ...]) -> bool:
    """Whether ``org`` has exactly ``previous``'s pairs, each over the same files, and the same problems of
    its references: the same departments and projects, broken files, structure (:func:`_structure`) and
    template documents (the very objects: a template whose file did not change is the one read before).
    Then only a changed document's users need composing."""
    before = previous.org
    if (
        previous.structure != structure
        or before.departments != org.departments
        or before.clusters != org.clusters
        or before.broken != org.broken
    ):
        return False
    if before.templates.keys() != org.templates.keys():
        return False
    for scope, by_name in org.templates.items():
        old = before.templates[scope]
        if old.keys() != by_name.keys() or any(old[name] is not t for name, t in by_name.items()):
            return False
    return True


class Job:
    """One recomputation: iterate :meth:`steps` (each step composes at most one pair), then read
    :attr:`result`.  Dropping the iterator part-way leaves no trace: the previous state stays whole."""

    def __init__(
        self, org: Org, previous: Analysis | None, variables: Mapping[str, str] | None = None
    ) -> None:
        self.org = org
        self.previous = previous
        self.variables = dict(variables or {})
        self.result: Analysis | None = None

    def steps(self) -> Iterator[str | None]:
        """Yields the id of each pair it composes (``None`` for the planning step)."""
        org, previous = self.org, self.previous
        new_docs = documents(org)
        structure = _structure(org)
        if previous is not None and _same_shape(previous, org, structure):
            yield from self._edited(previous, new_docs, structure)
            return
        old_docs = previous.documents if previous is not None else {}
        trust = previous is not None and previous.org.broken == org.broken
        same_file: dict[str, bool] = {}

        def unchanged(name: str) -> bool:
            found = same_file.get(name)
            if found is None:
                found = same_file[name] = same_document(old_docs.get(name), new_docs.get(name))
            return found

        states: dict[str, PairState] = {}
        todo: list[tuple[Pair, tuple[str, ...]]] = []
        users: dict[str, list[str]] = {}
        every = org_pairs(org)
        same_structure = previous is not None and previous.structure == structure
        for pair in every:
            old = previous.pairs.get(pair.id) if previous is not None else None
            if (
                same_structure
                and old is not None
                and old.pair.template is pair.template
                and old.pair.view == pair.view
            ):
                deps = old.deps  # the same template document over the same files: the same dependencies
            else:
                deps = dependencies(org, pair)
            for dep in dict.fromkeys(deps):  # a file may be a dependency twice (imposed and named)
                users.setdefault(dep, []).append(pair.id)
            if (
                old is not None
                and trust
                and old.pair.view == pair.view
                and old.deps == deps
                and all(unchanged(dep) for dep in deps)
            ):
                states[pair.id] = PairState(pair, deps, old.outcome)
            else:
                todo.append((pair, deps))
        yield None
        cache: MergeCache = {}
        for pair, deps in todo:
            states[pair.id] = PairState(pair, deps, compose_pair(org, pair, self.variables, cache))
            yield pair.id
        ordered = {pair.id: states[pair.id] for pair in every}
        self.result = Analysis(
            org,
            ordered,
            _problems(org),
            tuple(org.warnings),
            tuple(pair.id for pair, _ in todo),
            {file: tuple(ids) for file, ids in users.items()},
            structure,
            new_docs,
        )

    def _edited(
        self, previous: Analysis, new_docs: Mapping[str, Any], structure: tuple[object, ...]
    ) -> Iterator[str | None]:
        """The org has the same pairs over the same files as ``previous`` (:func:`_same_shape`): only the
        users of the files whose document changed are composed; the rest of the state is ``previous``'s."""
        old_docs = previous.documents
        changed = [
            f
            for f in new_docs.keys() | old_docs.keys()
            if not same_document(old_docs.get(f), new_docs.get(f))
        ]
        todo = {pid for file in changed for pid in previous.users.get(file, ())}
        yield None
        states = dict(previous.pairs)
        cache: MergeCache = {}
        org = self.org
        for pid in (pid for pid in previous.pairs if pid in todo):
            old = previous.pairs[pid]
            states[pid] = PairState(old.pair, old.deps, compose_pair(org, old.pair, self.variables, cache))
            yield pid
        self.result = replace(
            previous,
            org=org,
            pairs=states,
            warnings=tuple(org.warnings),
            composed=tuple(pid for pid in previous.pairs if pid in todo),
            structure=structure,
            documents=new_docs,
        )


def analyse(
    org: Org, previous: Analysis | None = None, variables: Mapping[str, str] | None = None
) -> Analysis:
    """The next state at once (:class:`Job` without pauses)."""
    job = Job(org, previous, variables)
    for _ in job.steps():
        pass
    assert job.result is not None
    return job.result
