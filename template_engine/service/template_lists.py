"""Lists of stored templates: the templates the caller may read (of a kind, or of every kind), filtered,
sorted and paged as Run:ai's lists are, composed only when a filter or the order needs it, and each entry
with its ``complianceIssues`` when a project was named (:mod:`.compliance`).  What a list composes is priced
first (:mod:`.budget`): beyond the request's budget a 413, and a page stops where its work or its bytes
would exceed it (the rest is the next page's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from template_engine.kinds import WorkloadKind
from template_engine.pricing import Pricer, data_bytes
from template_engine.service.auth import Principal
from template_engine.service.budget import REQUEST_BUDGET, REQUEST_BYTES, over_budget, rows_price
from template_engine.service.compliance import Comply
from template_engine.service.composer import composed, template_meta
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.listing import needs_composition, parse_filters, sort_key
from template_engine.service.placements import template_scope
from template_engine.service.storage.repository import TemplateRow


def _visible(ctx: Ctx, kind: WorkloadKind | None) -> list[tuple[TemplateRow, Placement]]:
    """The templates (of ``kind``, or of every kind) the caller may read, as heads (no document:
    :func:`_whole` reads one)."""
    out = []
    for row in ctx.repo.template_heads():
        if kind is not None and row.kind != kind.name:
            continue
        own = template_scope(ctx, row)
        if ctx.access.can_read(own.ref):
            out.append((row, own))
    return out


def _whole(ctx: Ctx, row: TemplateRow) -> TemplateRow:
    """The whole row of a head (its document read), or the row itself."""
    if not row.head:
        return row
    whole = ctx.repo.template(row.id)
    return whole if whole is not None else row  # pragma: no cover - read in the same transaction


class _Prices:
    """The price of composing stored templates (:mod:`..budget`): the template's document and the defaults
    and policies of the scopes it is seen from, read once per scope."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.pricer = Pricer()
        self._chains: dict[str, tuple[list[Any], list[Any]]] = {}

    def _chain(self, view: Placement) -> tuple[list[Any], list[Any]]:
        """The defaults, and the policies, of the scopes ``view`` is seen from."""
        chain = self._chains.get(view.key)
        if chain is None:
            keys = view.chain_keys()
            defaults = [r.document for r in self.ctx.repo.defaults(keys).values()]
            policies = [r.document for r in self.ctx.repo.policies(keys).values()]
            chain = self._chains[view.key] = (defaults, policies)
        return chain

    def __call__(self, row: TemplateRow, view: Placement) -> int:
        defaults, policies = self._chain(view)
        return rows_price(self.pricer, [row.document, *defaults, *policies])

    def bytes(self, row: TemplateRow, view: Placement) -> int:
        """The bytes of the entry of ``row`` seen from ``view``, priced from what it stores before it is
        read or composed (a head's stored size): the template shown as it is (``spec``, ``masterSpec``) and
        combined with the defaults of its scopes (``combinedSpec``, ``combinedMasterSpec``)."""
        defaults, _ = self._chain(view)
        own = self.ctx.repo.template_size(row.id) if row.head else self.pricer.bytes(row.document)
        return 2 * own + 2 * sum(self.pricer.bytes(d) for d in defaults)


def _entries(
    ctx: Ctx, filter_by: list[str] | None, search: str | None, compose_all: bool, kind: WorkloadKind | None
) -> list[dict[str, Any]]:
    """The entries a list holds (of ``kind``, or of every kind), composed when a filter or the order needs
    their ``runnable``: then every one is priced first, and a ``413`` answers a list whose compositions exceed
    the request's budget."""
    filters = parse_filters(filter_by)
    entries: list[dict[str, Any]] = []
    listed = [
        (row, own) for row, own in _visible(ctx, kind) if not search or search.lower() in row.name.lower()
    ]
    if compose_all or needs_composition(filters, None):
        listed = [(_whole(ctx, row), own) for row, own in listed]  # each is composed: read whole
        price = _Prices(ctx)
        total = sum(price(row, own) for row, own in listed)
        if total > REQUEST_BUDGET:
            raise over_budget(
                f"composing the {len(listed)} templates that are sorted or filtered by runnable", total
            )
    for row, own in listed:
        entry: dict[str, Any] = {"meta": template_meta(row, own, own), "_row": (row, own)}
        if compose_all or needs_composition(filters, None):
            entry = composed(ctx, row, own, own)[1] | {"_row": (row, own)}
        if all(f(entry) for f in filters):
            entries.append(entry)
    return entries


@dataclass(frozen=True, slots=True)
class Asked:
    """What a list was asked of its page, order and filters (Run:ai's list parameters)."""

    offset: int
    limit: int
    sort_by: str
    descending: bool
    filter_by: list[str] | None
    search: str | None


def list_templates(
    store: Store,
    principal: Principal,
    asked: Asked,
    kind: WorkloadKind | None,
    comply: Callable[[Ctx], Comply],
) -> dict[str, Any]:
    """A list of the templates of ``kind`` (``None``: of every kind), each with its compliance."""
    offset, limit = asked.offset, asked.limit
    with store.read(principal) as ctx:
        compliance = comply(ctx)
        entries = _entries(ctx, asked.filter_by, asked.search, asked.sort_by == "runnable", kind)
        entries.sort(key=sort_key(asked.sort_by), reverse=asked.descending)
        page = entries[offset : offset + limit]
        out: list[dict[str, Any]] = []
        price, spent, sent = _Prices(ctx), 0, 0
        for entry in page:
            head, own = entry.pop("_row")
            # The page's work is paged too: entries are composed while they fit the request's budget (one
            # at least), and the rest are left to the next page.  So are its bytes (REQUEST_BYTES): priced
            # from the stored documents before the entry is composed, then from the entry composed.
            stored = price.bytes(head, own)
            if out and sent + stored > REQUEST_BYTES:
                break  # priced from the head: the document is not even read
            row = _whole(ctx, head)
            cost = 0 if "runnable" in entry else price(row, own)
            target = compliance.target
            if target is not None and own.contains(target):
                cost += price(row, target)
            if out and spent + cost > REQUEST_BUDGET:
                break
            spent += cost
            if "runnable" not in entry:
                entry = dict(composed(ctx, row, own, own)[1])  # a copy: the composed body is shared
            issues = compliance.issues(ctx, row, own)
            if issues is not None:
                entry["complianceIssues"] = issues
            size = data_bytes(entry)
            if out and sent + size > REQUEST_BYTES:
                break
            sent += size
            out.append(entry)
    pagination: dict[str, Any] = {"limit": limit, "offset": offset}
    if offset + len(out) < len(entries):  # Run:ai's nextOffset is never null: absent on the last page
        pagination["nextOffset"] = offset + len(out)
    return {"entries": out, "pagination": pagination}


def template_count(
    store: Store, principal: Principal, filter_by: list[str] | None, search: str | None
) -> int:
    """How many templates of every kind the caller may read match the filters."""
    with store.read(principal) as ctx:
        return len(_entries(ctx, filter_by, search, False, None))
