"""The service's scope model is read from the scope table (issue 33): a placement's chain, containment,
parent and children follow the served levels; who manages a unit is its parent scope's managers; and every
level of units has its routes, made by one factory from its row."""

from __future__ import annotations

from datetime import UTC, datetime

from template_engine.scopes import LEVELS
from template_engine.service.auth import Access, Principal, ScopeRef
from template_engine.service.context import SERVED_LEVELS, Placement
from template_engine.service.org_units import UNIT_LEVELS
from template_engine.service.routes.orgunits import router
from template_engine.service.storage.repository import Audit, DepartmentRow, ProjectRow

_NOW = datetime(2026, 1, 1, tzinfo=UTC)
_AUDIT = Audit(1, "test", _NOW, "test", _NOW)
RESEARCH = DepartmentRow(1, "research", None, _AUDIT)
SALES = DepartmentRow(2, "sales", None, _AUDIT)
VISION = ProjectRow(3, "vision", None, 1, _AUDIT)


def test_the_served_levels_are_rows_of_the_scope_table_in_its_order() -> None:
    served = [level.type for level in SERVED_LEVELS]
    assert served == [level.type for level in LEVELS if level.type in served]
    assert served[0] == LEVELS[0].type


def test_a_placement_reads_its_chain_and_containment_from_the_levels() -> None:
    system = Placement("system")
    research = system.below("department", RESEARCH)
    vision = research.below("project", VISION)
    assert (research.type, research.department, research.project) == ("department", RESEARCH, None)
    assert (vision.type, vision.department, vision.project) == ("project", RESEARCH, VISION)
    assert vision.chain_keys() == ["system", "department:1", "project:3"]
    assert (vision.key, vision.id, research.key, system.key) == ("project:3", 3, "department:1", "system")
    assert vision.parent() == research and research.parent() == system and system.parent() == system
    assert system.contains(vision) and research.contains(vision) and vision.contains(vision)
    assert not vision.contains(research) and not research.contains(system)
    assert not system.below("department", SALES).contains(vision)


def test_who_manages_a_unit_is_decided_by_its_parent_scope() -> None:
    system = Placement("system")
    research, sales = system.below("department", RESEARCH), system.below("department", SALES)
    admin = Access(Principal("a", "system-admin"), None)
    # bound as Store._access binds them: to the unit, with the units above it
    head = Access(Principal("b", "department-admin", department="research"), "research", research.ref)
    vision = ScopeRef("project", department="research", project="vision")
    editor = Access(Principal("c", "project-editor", project="vision"), "research", vision)
    assert all(admin.can_manage_units(place.ref) for place in (system, research, sales))
    assert head.can_manage_units(research.ref)
    assert not head.can_manage_units(sales.ref) and not head.can_manage_units(system.ref)
    assert not any(editor.can_manage_units(place.ref) for place in (system, research))


def test_every_level_of_units_has_its_routes() -> None:
    routes = {
        (getattr(route, "path_format", ""), method)
        for route in router.routes
        for method in getattr(route, "methods", ())
    }
    for unit in UNIT_LEVELS:
        base, one = f"/api/v1/org-unit/{unit.plural}", f"/api/v1/org-unit/{unit.plural}/{{{unit.param}}}"
        expected = {
            (base, "POST"),
            (base, "GET"),
            (f"{base}/count", "GET"),
            (one, "GET"),
            (one, "PUT"),
            (one, "DELETE"),
            (f"{one}/resources", "PUT"),
            (f"{one}/resources", "PATCH"),
        }
        assert expected <= routes, unit.type
