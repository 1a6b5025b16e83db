"""The budget of one request: the whole work it may do, priced before any of it runs.

One composition is bounded by the expression language (:mod:`template_engine.expressions`); a request that
composes many is priced as a whole by :mod:`template_engine.pricing` (units of work: a JSON value of the
documents each composition reads, :data:`~template_engine.pricing.EXPRESSION_PRICE` for a value holding an
expression, :data:`~template_engine.pricing.COMPOSITION_PRICE` per composition) and held to
:data:`REQUEST_BUDGET`:

* a ``validateOnly`` write (and the UI's preview, which is one): the compositions of every template it may
  change, before and after, and the values of the two stored orgs it compares; beyond the budget, ``413``
  with the numbers and nothing composed;
* a list (and a count) that sorts or filters by ``runnable``, which must compose every template it lists:
  ``413`` likewise;
* any other list composes only its page, and pages the work: it composes the page's entries while they fit
  the budget (at least one) and answers the rest through ``nextOffset``, as a shorter page.

An answer is priced in bytes as well (:data:`REQUEST_BYTES`, :func:`~template_engine.pricing.data_bytes`,
an upper bound of the JSON it writes), before it is written: a list of templates holds the entries that fit
(at least one) and answers the rest through ``nextOffset``, priced first from the stored documents each entry
shows, then from the entry composed; a list without paging in Run:ai's shape (the assets) is a ``413``
naming the numbers beyond it; a ``validateOnly`` answer lists the changes that fit and counts the rest in
``changesOmitted``.

The figures are in ``docs/http-api.md`` ("The budget of a request") and ``docs/performance.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from template_engine.diff import Work
from template_engine.errors import Problem
from template_engine.org import Org
from template_engine.pricing import COMPOSITION_PRICE, Pricer, data_bytes
from template_engine.service.errors import ApiError

#: Units of work one request may spend: about 0.4 CPU-second at most on the reference machine (a unit is
#: 0.4 to 0.9 µs there, docs/performance.md).  The example org's largest validateOnly (a change of
#: the system defaults: 36 compositions) spends 48,000, a tenth of it.
REQUEST_BUDGET = 500_000


#: The most bytes of JSON one answer may hold beyond its first entry: a page of templates is cut where the
#: next entry would pass it.  The largest answer of one template (a 1 MiB document shown as ``spec``,
#: ``combinedSpec`` and ``combinedMasterSpec``) is about 3 MiB; the example org's whole list is 0.2 MiB.
REQUEST_BYTES = 4 * 1024 * 1024


def over_bytes(what: str, size: int, budget: int = REQUEST_BYTES) -> ApiError:
    """The ``413`` of an answer that would hold ``size`` bytes of JSON: ``what`` says which answer."""
    problem = Problem(
        f"{what} would hold up to {size:,} bytes",
        (),
        None,
        f"at most {budget:,} bytes per answer (docs/http-api.md, 'The budget of a request'); narrow the list",
    )
    return ApiError(
        413,
        f"This answer is too large: {what} would hold up to {size:,} bytes; at most {budget:,} per answer.",
        [problem],
    )


def admit_answer(what: str, documents: Iterable[Any], budget: int = REQUEST_BYTES) -> None:
    """Refuse (``413``) an answer that shows ``documents`` (a list without paging: the assets) when their
    bytes (:func:`~template_engine.pricing.data_bytes`) pass ``budget``, before it is written."""
    size = sum(data_bytes(document) for document in documents)
    if size > budget:
        raise over_bytes(what, size, budget)


def over_budget(what: str, price: int, budget: int = REQUEST_BUDGET) -> ApiError:
    """The ``413`` of a request whose work would cost ``price`` units: ``what`` says which work."""
    problem = Problem(
        f"{what} may cost up to {price:,} units of work",
        (),
        None,
        f"at most {budget:,} units per request (docs/http-api.md, 'The budget of a request')",
    )
    return ApiError(
        413,
        f"This request's work is too large: {what} may cost up to {price:,} units of work; at most "
        f"{budget:,} per request.",
        [problem],
    )


def _values_read(pricer: Pricer, orgs: Iterable[Org]) -> int:
    """The values of every document of ``orgs``: each was read and validated (a unit each, expressions
    included: nothing of them is rendered to read them)."""
    datas: list[Any] = []
    for org in orgs:
        datas += [found.source.data for found in org.defaults.values()]
        datas += [t.source.data for by_name in org.templates.values() for t in by_name.values()]
        datas += [a.source.data for by_kind in org.assets.values() for a in by_kind.values()]
        datas += [p.data for p in (*org.policies.values(), *org.kind_policies.values())]
    return sum(pricer.data(data, expression=1) for data in datas)


def admit_diff(before: Org, after: Org, budget: int = REQUEST_BUDGET) -> Callable[[Work], None]:
    """For :func:`~template_engine.diff.diff_orgs`: refuse the comparison of two stored orgs whose
    compositions and values read would cost more than ``budget`` (raised before anything is composed)."""

    def admit(work: Work) -> None:
        pricer = Pricer()
        price = pricer.compositions(work) + _values_read(pricer, (before, after))
        if price > budget:
            templates = len({pair.template.file for _, pair in work})
            raise over_budget(
                f"this change affects {templates} templates, whose {len(work)} compositions",
                price,
                budget,
            )

    return admit


def rows_price(pricer: Pricer, documents: Iterable[Any]) -> int:
    """The units of one composition of stored rows: the documents it reads (the template, the defaults and
    policies of its scopes) and the composition's own."""
    return COMPOSITION_PRICE + sum(pricer.data(document) for document in documents)
