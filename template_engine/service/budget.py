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

The figures are in ``docs/http-api.md`` ("The budget of a request") and ``docs/performance.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from template_engine.diff import Work
from template_engine.errors import Problem
from template_engine.org import Org
from template_engine.pricing import COMPOSITION_PRICE, Pricer
from template_engine.service.errors import ApiError

#: Units of work one request may spend: about 0.4 CPU-second at most on the reference machine (a unit is
#: 0.4 to 0.9 µs there, docs/performance.md).  The example org's largest validateOnly (a change of
#: the system defaults: 36 compositions) spends 48,000, a tenth of it.
REQUEST_BUDGET = 500_000


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
        datas += [p.data for p in org.policies.values()]
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
