"""What a comparison needs to know of a pair's outcome to tell that it did not change: its :class:`Summary`.

``diff`` and ``impact`` decide that a pair is unchanged when the two sides' outcomes are the same
(:func:`template_engine.diff._compare` returns ``None``): both compose to the same effective output and the
same cluster objects, or both fail with the same problems (as their one-line texts show them).  A summary
holds exactly that, as plain JSON data, so that an outcome composed by an earlier process can be recalled
(:class:`Recall`, kept by the fact cache, ``loader/facts.py``) instead of composed again.

A summary only ever says *same*: when two summaries (or a summary and a fresh outcome) differ, the pair is
compared as without a cache, because the changes list where each value was set (provenance), which a
summary does not hold: the new side is composed, and the old side is the :class:`Kept` outcome an earlier
process kept beside its summary (its output and objects, believed only with that summary's digest) unless a
change needs who used to set a removed value, when it is composed too.  Pure: nothing here reads files.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from template_engine.diffing.pairs import Outcome, Pair
from template_engine.errors import Problem
from template_engine.loader.tree import CLUSTER_FILE
from template_engine.org import Org


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON exactly: mappings of text keys (``dict``), lists, text, whole and finite
    decimal numbers, booleans and null; so its canonical JSON text tells apart what
    :func:`~template_engine.diffing.fields.same` tells apart (a tuple or a key that is not text would not
    be)."""
    kind = type(value)
    if kind is dict:
        return all(type(key) is str and _plain(item) for key, item in value.items())
    if kind is list:
        return all(_plain(item) for item in value)
    if kind is float:
        return math.isfinite(value)
    return kind in (str, int, bool) or value is None


@dataclass(frozen=True, slots=True)
class Summary:
    """A pair's outcome as a comparison sees it: whether it composes, its problems' one-line texts, and a
    BLAKE2b digest of the canonical JSON text (sorted keys) of its effective output and cluster objects
    (empty when it does not compose)."""

    composes: bool
    problems: tuple[str, ...]
    digest: str

    @classmethod
    def of(cls, outcome: Outcome) -> Summary | None:
        """The summary of ``outcome``, or ``None`` when its values are not plain JSON (:func:`_plain`):
        such an outcome is compared only for real."""
        problems = tuple(problem.one_line() for problem in outcome.problems)
        if outcome.composition is None:
            return cls(False, problems, "")
        shown = [outcome.output, list(outcome.objects or ())]
        if not _plain(shown):
            return None
        return cls(True, problems, _digest(shown))

    def same_as(self, other: Summary) -> bool:
        """Whether a comparison of the two outcomes finds no change (``diff._compare``).  Two plain values
        with the same canonical JSON text are :func:`~template_engine.diffing.fields.same`; values that are
        ``same`` but written differently (``0.0`` and ``-0.0``) count as different, and the pair is then
        composed and compared for real: never the other way round."""
        if not (self.composes and other.composes):
            return self.composes == other.composes and self.problems == other.problems
        return self.digest == other.digest

    def to_json(self) -> str:
        return json.dumps({"composes": self.composes, "problems": list(self.problems), "digest": self.digest})


def _digest(shown: list[Any]) -> str:
    """The BLAKE2b digest of the canonical JSON text of ``[output, objects]`` (a :class:`Summary`'s)."""
    text = json.dumps(shown, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=32).hexdigest()


@dataclass(frozen=True, slots=True)
class Kept:
    """The outcome of a pair that composed, as kept beside its :class:`Summary`: its effective output and
    cluster objects, plain JSON.  It stands for the *old* side of a pair that differs, so that side is not
    composed again, when no change of the comparison needs where an old value was set (the one thing of
    the old composition a comparison reads beside these: ``diff._compare_kept``).  It has what a
    :class:`~template_engine.diffing.pairs.Outcome` that composes shows of that side (its status, no
    problems)."""

    pair: Pair
    output: dict[str, Any]
    objects: tuple[dict[str, Any], ...]
    #: It composed, so no problem stopped it (``Outcome.problems``).
    problems: tuple[Problem, ...] = ()

    def status(self) -> str:
        """``Outcome.status()`` of the outcome it was kept for (``runnable.isRunnable`` of its output)."""
        return "runnable" if self.output["runnable"]["isRunnable"] is True else "not runnable"


def kept_json(outcome: Outcome) -> str | None:
    """What :class:`Kept` keeps of ``outcome``, as JSON text (insertion order kept, so that it reads back
    the same values in the same order); ``None`` when it does not compose or is not plain JSON."""
    if outcome.composition is None or outcome.problems:
        return None
    shown = {"output": outcome.output, "objects": list(outcome.objects or ())}
    if not _plain(shown):
        return None
    return json.dumps(shown, ensure_ascii=False, allow_nan=False)


def kept_from_json(text: str, pair: Pair, summary: Summary) -> Kept | None:
    """The :class:`Kept` that :func:`kept_json` wrote, believed only when its digest is ``summary``'s (the
    summary recalled for the same pair and inputs, of an outcome that composed without problems); ``None``
    for anything else."""
    if not summary.composes or summary.problems:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) != {"output", "objects"}:
        return None
    output, objects = data["output"], data["objects"]
    if not isinstance(output, dict) or not isinstance(objects, list):
        return None
    if not all(isinstance(o, dict) for o in objects):
        return None
    runnable = output.get("runnable")
    if not isinstance(runnable, dict) or not isinstance(runnable.get("isRunnable"), bool):
        return None
    if _digest([output, objects]) != summary.digest:
        return None
    return Kept(pair, output, tuple(objects))


def from_json(text: str) -> Summary | None:
    """The summary that :meth:`Summary.to_json` wrote, or ``None`` for text of any other shape."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) != {"composes", "problems", "digest"}:
        return None
    composes, problems, digest = data["composes"], data["problems"], data["digest"]
    if not isinstance(composes, bool) or not isinstance(problems, list) or not isinstance(digest, str):
        return None
    if not all(isinstance(p, str) for p in problems) or (len(digest) == 64) != composes:
        return None
    return Summary(composes, tuple(problems), digest)


class Recall(Protocol):
    """Summaries of one side's pairs kept between processes (``loader.facts.Answers``): ``recall`` gives the
    one an earlier process recorded for this pair with exactly these dependencies (every file's content,
    the org's shape, the variables and the code), ``record`` keeps one for a later process."""

    def recall(self, pair: Pair, deps: tuple[str, ...]) -> Summary | None: ...

    def record(self, pair: Pair, deps: tuple[str, ...], summary: Summary) -> None: ...

    def kept(self, pair: Pair, deps: tuple[str, ...], summary: Summary) -> Kept | None: ...

    def keep(self, pair: Pair, deps: tuple[str, ...], outcome: Outcome) -> None: ...


class Store(Protocol):
    """Where answers are kept between processes (``loader.facts.FactCache``): text under a key that the
    store derives from the caller's description of every input and its own code fingerprint."""

    def answer_key(self, what: str) -> bytes: ...

    def answer(self, key: bytes) -> str | None: ...

    def remember_answer(self, key: bytes, text: str) -> None: ...


def _libraries() -> str:
    """The versions of what composing uses beside the package and what the store's fingerprint covers
    (Python, pydantic, PyYAML): Jinja2, which renders the templates' expressions."""
    import jinja2

    return f"jinja2 {jinja2.__version__}"


class Answers:
    """The :class:`Recall` of one side of a comparison: summaries kept in ``store`` under a key made of the
    pair (its id, its view, its template's scope and name), the content of every file it depends on
    (``contents``: a file's git blob id or BLAKE2b digest as the loader read it, by path), the org's shape
    (``org.yaml``'s departments and projects), the cluster settings as read (``cluster.yaml``: its values and
    lines), the variables and the libraries' versions; the store adds the code's fingerprint.

    A pair with a dependency whose content is not known (a file not in ``contents``) is neither recalled nor
    recorded, and a summary that does not read back (:func:`from_json`) is not believed.  Build it with
    :meth:`of`, which gives none for an org with invalid files (their problems may reach a composition
    through what is missing; such a side is composed as without a cache).
    """

    def __init__(self, store: Store, org: Org, contents: Mapping[str, str], context: str) -> None:
        self.store = store
        self.org = org
        self.contents = contents
        self._context = context
        self.recalled = 0
        self.recorded = 0

    @classmethod
    def of(
        cls,
        store: Store,
        org: Org,
        contents: Mapping[str, str],
        variables: Mapping[str, str] | None = None,
    ) -> Answers | None:
        if org.broken:
            return None
        shape = repr(sorted(org.departments.items()))
        cluster = f"{org.cluster!r}\0{org.cluster_source!r}\0{sorted(org.clusters.items())!r}"
        given = repr(sorted((variables or {}).items()))
        return cls(store, org, contents, f"{_libraries()}\0{shape}\0{cluster}\0{given}")

    def _key(self, pair: Pair, deps: tuple[str, ...], what: str = "") -> bytes | None:
        """The key of the pair's summary (``what`` empty) or of what else is kept of it (``"kept"``)."""
        parts = [self._context, pair.id, repr(pair.view), str(pair.template.scope), pair.template.name]
        parts = [what, *parts] if what else parts
        for dep in deps:
            if dep.startswith("?") or dep.endswith(CLUSTER_FILE):  # absent (by its name), or in the context
                parts.append(dep)
                continue
            content = self.contents.get(dep)
            if content is None:
                return None
            parts.append(f"{dep}\0{content}")
        return self.store.answer_key("\0\0".join(parts))

    def recall(self, pair: Pair, deps: tuple[str, ...]) -> Summary | None:
        key = self._key(pair, deps)
        text = self.store.answer(key) if key is not None else None
        found = from_json(text) if text is not None else None
        self.recalled += found is not None
        return found

    def record(self, pair: Pair, deps: tuple[str, ...], summary: Summary) -> None:
        key = self._key(pair, deps)
        if key is not None:
            self.store.remember_answer(key, summary.to_json())
            self.recorded += 1

    def kept(self, pair: Pair, deps: tuple[str, ...], summary: Summary) -> Kept | None:
        """The :class:`Kept` outcome :meth:`keep` recorded for the pair with these dependencies, if it is
        the one ``summary`` (recalled for the same) describes (:func:`kept_from_json`)."""
        key = self._key(pair, deps, "kept")
        text = self.store.answer(key) if key is not None else None
        return kept_from_json(text, pair, summary) if text is not None else None

    def keep(self, pair: Pair, deps: tuple[str, ...], outcome: Outcome) -> None:
        """Keep what :class:`Kept` holds of ``outcome`` (nothing when :func:`kept_json` gives none)."""
        key = self._key(pair, deps, "kept")
        text = kept_json(outcome) if key is not None else None
        if key is not None and text is not None:
            self.store.remember_answer(key, text)
