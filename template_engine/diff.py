"""What changes between two versions of an org: every pair whose effective output or cluster objects differ,
field by field and object path by object path.

Pure: two :class:`~template_engine.org.Org` values in, a :class:`OrgDiff` out.  Only pairs that can differ
are composed: a pair whose view, template and every file it depends on (``dependencies``) are the same on
both sides composes to the same output, so a change to one department's defaults recomposes that
department's pairs and nothing else.  Every pair depends on ``cluster.yaml`` (its objects are built with the
cluster settings), so a change of a setting recomposes every pair, and a pair whose specs are the same but
whose objects differ is a changed pair with object changes only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from template_engine.compose import MergeCache
from template_engine.diffing.answers import Kept, Recall, Summary
from template_engine.diffing.fields import FieldChange, diff_outputs, same
from template_engine.diffing.objects import ObjectChange, diff_objects
from template_engine.diffing.pairs import (
    Outcome,
    Pair,
    compose_pair,
    dependencies,
    documents,
    pairs,
    same_document,
)
from template_engine.errors import Problem
from template_engine.org import Org

Status = Literal["changed", "appeared", "disappeared"]


@dataclass(frozen=True, slots=True)
class PairDiff:
    """One pair that differs: changed (with its field changes and its objects' changes), appeared or
    disappeared."""

    pair: Pair
    status: Status
    #: A changed pair's old side may be the outcome an earlier process kept (:class:`Kept`, it composed).
    old: Outcome | Kept | None
    new: Outcome | None
    changes: tuple[FieldChange, ...] = ()
    #: What changes in the cluster objects (``Composition.manifests``), by object path.
    object_changes: tuple[ObjectChange, ...] = ()

    @property
    def id(self) -> str:
        return self.pair.id

    def error_lines(self) -> tuple[list[str], list[str]]:
        """The composition problems of the old and new side (empty when that side composes)."""
        old = [p.one_line() for p in self.old.problems] if self.old is not None else []
        new = [p.one_line() for p in self.new.problems] if self.new is not None else []
        return old, new

    def to_dict(self) -> dict[str, Any]:
        out = self.pair.to_dict()
        out["status"] = self.status
        for side, outcome in (("old", self.old), ("new", self.new)):
            if outcome is not None:
                out[side] = {"status": outcome.status(), "errors": [p.to_dict() for p in outcome.problems]}
        out["changes"] = [change.to_dict() for change in self.changes]
        out["objectChanges"] = [change.to_dict() for change in self.object_changes]
        return out


@dataclass(frozen=True, slots=True)
class OrgDiff:
    """The pairs that differ, in a stable order (the new org's pair order, then pairs that disappeared)."""

    pairs: tuple[PairDiff, ...]
    #: Pairs on either side.
    total: int
    #: Pairs that had to be composed to compare them (the others provably did not change).
    composed: int
    #: For an impact query: the pairs (on either side) that depend on the file asked about.
    users: tuple[str, ...] = field(default_factory=tuple)
    #: Files (or folders) of the new side that are invalid, and were not, or not so, before: the pairs they
    #: would make are missing, so they count as a difference.
    broken: tuple[tuple[str, tuple[Problem, ...]], ...] = field(default_factory=tuple)
    #: Outcomes not composed but recalled (``recall``: summaries an earlier process kept), on either side.
    recalled: int = 0

    @property
    def differs(self) -> bool:
        return bool(self.pairs or self.broken)

    def count(self, status: Status) -> int:
        return sum(p.status == status for p in self.pairs)

    def summary(self) -> dict[str, int]:
        return {
            "invalidFiles": len(self.broken),
            "pairs": self.total,
            "changed": self.count("changed"),
            "appeared": self.count("appeared"),
            "disappeared": self.count("disappeared"),
            "unchanged": self.total - len(self.pairs),
        }

    def summary_line(self) -> str:
        """``3 of 18 pairs differ: 2 changed, 1 appeared; 1 invalid file``: ``diff``'s last line, and the
        first of its pull-request comment."""
        counts = self.summary()
        parts = [f"{counts[s]} {s}" for s in ("changed", "appeared", "disappeared") if counts[s]]
        text = (
            f"{len(self.pairs)} of {self.total} pairs differ: {', '.join(parts)}"
            if self.pairs
            else f"no pair differs ({self.total} pairs)"
        )
        if self.broken:
            text += f"; {len(self.broken)} invalid file{'s' * (len(self.broken) != 1)}"
        return text


class _Side:
    """One org with its pairs by id and, lazily, each pair's dependencies."""

    def __init__(self, org: Org) -> None:
        self.org = org
        self.pairs = {pair.id: pair for pair in pairs(org)}
        self.documents = documents(org)
        self._deps: dict[str, tuple[str, ...]] = {}

    def deps(self, pair: Pair) -> tuple[str, ...]:
        found = self._deps.get(pair.id)
        if found is None:
            found = self._deps[pair.id] = dependencies(self.org, pair)
        return found


def _compare(old: Outcome, new: Outcome) -> tuple[tuple[FieldChange, ...], tuple[ObjectChange, ...]] | None:
    """The field and object changes between two outcomes, or ``None`` when they are the same."""
    if old.composition is None or new.composition is None:
        if old.composition is None and new.composition is None:
            shown = [p.one_line() for p in old.problems] == [p.one_line() for p in new.problems]
            return None if shown else ((), ())
        return (), ()  # one side has neither specs nor objects: its problems say why
    before, after = old.output, new.output
    objects = tuple(diff_objects(old.objects, new.objects))
    if same(before, after) and not objects:
        return None
    return tuple(diff_outputs(before, after, new.composition, old.composition)), objects


Compared = tuple[tuple[FieldChange, ...], tuple[ObjectChange, ...]]


def _compare_kept(old: Kept, new: Outcome) -> tuple[bool, Compared | None]:
    """:func:`_compare` of an old side kept by an earlier process and a composed new side: ``(True, what
    _compare gives)`` when the answer needs nothing of the old composition but its output and objects (the
    new side composes, and every removed value names the layer that excluded it: only a value that simply
    stopped being set says who used to set it, from the old composition); else ``(False, None)``, and the
    old side is composed."""
    if new.composition is None:
        return False, None
    objects = tuple(diff_objects(old.objects, new.objects))
    if same(old.output, new.output) and not objects:
        return True, None
    changes = tuple(diff_outputs(old.output, new.output, new.composition, None))
    if any(change.kind == "removed" and change.excluded_by is None for change in changes):
        return False, None
    return True, (changes, objects)


#: The compositions a diff will make, each as ``(org, pair)``, in the order it makes them.
Work = Sequence[tuple[Org, Pair]]


def diff_orgs(
    old: Org,
    new: Org,
    variables: Mapping[str, str] | None = None,
    file: str | None = None,
    admit: Callable[[Work], None] | None = None,
    recall: tuple[Recall | None, Recall | None] = (None, None),
) -> OrgDiff:
    """Every pair whose effective output or cluster objects differ between ``old`` and ``new``.

    With ``file`` (a path relative to the templates folder), also list the pairs that depend on it.  With
    ``admit``, the compositions the diff needs are found first and handed to it before any is made: it may
    raise to refuse the work (a service prices them, :mod:`.pricing`).  With ``recall`` (the old and the new
    side's, :class:`~template_engine.diffing.answers.Recall`), a pair present on both sides whose outcome an
    earlier process kept for exactly its dependencies is not composed on that side when it proves the pair
    unchanged (:meth:`~template_engine.diffing.answers.Summary.same_as`); a pair that differs is composed on
    the new side, and on the old side unless an earlier process kept that side's outcome
    (:class:`~template_engine.diffing.answers.Kept`) and no change needs who used to set a removed value
    (:func:`_compare_kept`); every outcome composed is kept for a later process.  The answer is the same
    with or without it.
    """
    before, after = _Side(old), _Side(new)
    unchanged_files: dict[str, bool] = {}
    # A file that could not be read fails every composition that needs it; when those differ, compare all.
    trust_files = old.broken == new.broken

    def file_same(name: str) -> bool:
        found = unchanged_files.get(name)
        if found is None:
            found = unchanged_files[name] = same_document(
                before.documents.get(name), after.documents.get(name)
            )
        return found

    old_cache: MergeCache = {}
    new_cache: MergeCache = {}
    ids = list(after.pairs) + [pid for pid in before.pairs if pid not in after.pairs]
    users: list[str] = []
    # First what must be composed (nothing is composed yet), then the compositions.
    planned: list[tuple[Pair | None, Pair | None]] = []
    for pid in ids:
        old_pair, new_pair = before.pairs.get(pid), after.pairs.get(pid)
        deps = set(before.deps(old_pair) if old_pair else ()) | set(after.deps(new_pair) if new_pair else ())
        if file is not None and (file in deps or file == "org.yaml"):
            users.append(pid)
        if (
            old_pair is not None
            and new_pair is not None
            and trust_files
            and old_pair.view == new_pair.view
            and before.deps(old_pair) == after.deps(new_pair)
            and all(file_same(name) for name in after.deps(new_pair))
        ):
            continue
        planned.append((old_pair, new_pair))
    if admit is not None:
        work = [(old, p) for p, _ in planned if p is not None] + [
            (new, p) for _, p in planned if p is not None
        ]
        admit(work)
    diffs: list[PairDiff] = []
    composed = recalled = 0
    for old_pair, new_pair in planned:
        if old_pair is None or new_pair is None:
            present = new_pair or old_pair
            assert present is not None
            if new_pair:
                outcome = compose_pair(new, present, variables, new_cache)
            else:
                outcome = compose_pair(old, present, variables, old_cache)
            composed += 1
            status: Status = "appeared" if new_pair else "disappeared"
            diffs.append(
                PairDiff(present, status, None if new_pair else outcome, outcome if new_pair else None)
            )
            continue
        sides = (
            _Recalled(old, old_pair, before.deps(old_pair), recall[0], variables, old_cache),
            _Recalled(new, new_pair, after.deps(new_pair), recall[1], variables, new_cache),
        )
        if any(side.summary is not None for side in sides):
            first, second = sorted(sides, key=lambda side: side.summary is None)  # a recalled one first
            assert first.summary is not None
            other = second.known()
            if other is not None and first.summary.same_as(other):
                composed += sum(side.outcome is not None for side in sides)
                recalled += sum(side.outcome is None for side in sides)
                continue
        new_outcome = sides[1].composed()
        kept = sides[0].kept()
        usable, compared = _compare_kept(kept, new_outcome) if kept is not None else (False, None)
        if kept is not None and usable:  # the old side as an earlier process kept it: not composed
            composed += 1
            recalled += 1
            if compared is not None:
                diffs.append(PairDiff(new_pair, "changed", kept, new_outcome, *compared))
                sides[1].keep()
            continue
        old_outcome = sides[0].composed()
        composed += 2
        compared = _compare(old_outcome, new_outcome)
        if compared is not None:
            diffs.append(PairDiff(new_pair, "changed", old_outcome, new_outcome, *compared))
            sides[0].keep()  # for a later comparison with this side as its old one (the commit compared)
            sides[1].keep()
    broken = tuple(
        (name, problems) for name, problems in sorted(new.broken.items()) if old.broken.get(name) != problems
    )
    return OrgDiff(tuple(diffs), len(ids), composed, tuple(users), broken, recalled)


class _Recalled:
    """One side of a pair present on both: its kept summary, if ``recall`` has one, and its outcome,
    composed when first needed (and then kept through ``recall``)."""

    def __init__(
        self,
        org: Org,
        pair: Pair,
        deps: tuple[str, ...],
        recall: Recall | None,
        variables: Mapping[str, str] | None,
        cache: MergeCache,
    ) -> None:
        self._args = (org, pair, deps, recall, variables, cache)
        self.summary = recall.recall(pair, deps) if recall is not None else None
        self.outcome: Outcome | None = None
        self.real: Summary | None = None  # the composed outcome's summary (with ``recall``)
        #: Whether :meth:`kept` asked ``recall`` for the kept outcome, and found one.
        self.looked_up = self.had_kept = False

    def composed(self) -> Outcome:
        """The outcome, composed once; with ``recall``, its summary is kept unless the recalled one is it
        already (a wrong one is replaced)."""
        if self.outcome is None:
            org, pair, deps, recall, variables, cache = self._args
            self.outcome = compose_pair(org, pair, variables, cache)
            if recall is not None:
                real = self.real = Summary.of(self.outcome)
                if real is not None and real != self.summary:
                    recall.record(pair, deps, real)
        return self.outcome

    def kept(self) -> Kept | None:
        """The outcome an earlier process kept beside the recalled summary (:meth:`Recall.kept`), if any
        and if this side is not composed yet."""
        pair, deps, recall = self._args[1:4]
        if recall is None or self.summary is None or self.outcome is not None:
            return None
        found = recall.kept(pair, deps, self.summary)
        self.looked_up, self.had_kept = True, found is not None
        return found

    def keep(self) -> None:
        """Keep the composed outcome for a later process (:meth:`Recall.keep`): a side of a pair that
        differs, which that process may then not compose again.  Not when one is kept already (looked up
        and found), nor for a side that was not looked up whose recalled summary proved right: the process
        that recorded the summary of a pair that differed kept its outcome too."""
        pair, deps, recall = self._args[1:4]
        if recall is None or self.outcome is None or self.had_kept:
            return
        if self.looked_up or self.real != self.summary:
            recall.keep(pair, deps, self.outcome)

    def known(self) -> Summary | None:
        """The kept summary, or the composed outcome's (``None`` when it has none: :meth:`Summary.of`)."""
        if self.summary is not None:
            return self.summary
        outcome = self.composed()
        return self.real if self._args[3] is not None else Summary.of(outcome)
