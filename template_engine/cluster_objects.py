"""What the cluster runs, from Python and annotated: a composition's objects and where each value came from.

:func:`manifests` composes and returns :attr:`Composition.manifests <template_engine.compose.Composition>`;
:func:`origin_comments` turns each value's source (:class:`~template_engine.cluster.mapping.SpecSource`,
:class:`~template_engine.cluster.mapping.SettingSource`, :class:`~template_engine.cluster.mapping.Derived`)
into the text ``manifests --annotate`` writes beside it, located as ``explain`` locates a value:

- a spec field: ``worker: project vision defaults, projects/vision/defaults.yaml:12`` (the layer that set it,
  or the ``defaultFrom`` rule of a policy that derived it, as explain shows them);
- a cluster setting: ``cluster setting queues (cluster.yaml:16)``, or ``(default)`` when ``cluster.yaml`` does
  not set it;
- a value the mapping decides: its reason.
"""

from __future__ import annotations

from collections.abc import Mapping

from template_engine.cluster.mapping import Derived, Manifests, SettingSource, Source, SpecSource
from template_engine.cluster.problems import ObjectPath
from template_engine.cluster.yamlout import Comment
from template_engine.compose import Composition, compose
from template_engine.errors import Location
from template_engine.layers import Submission
from template_engine.org import Org, Template, View
from template_engine.paths import Path, format_path
from template_engine.policy.document import origin_text as policy_origin_text

__all__ = ["manifests", "origin_comments", "origin_text"]


def manifests(
    org: Org,
    template: Template | None,
    view: View,
    variables: Mapping[str, str] | None = None,
    submission: Submission | None = None,
) -> Manifests:
    """The objects the cluster runs for ``template`` (or a bare ``submission``) seen from ``view``.

    Raises as :func:`~template_engine.compose.compose` does for a template that cannot be composed; a
    composition that is not runnable still has its objects (``Manifests.problems`` and the composition's
    runnable issues say why the cluster would refuse them).
    """
    found = compose(org, template, view, variables, submission).manifests
    assert found is not None, "compose() renders the objects of every composition"
    return found


def _spec_text(composition: Composition, source: SpecSource) -> str:
    path: Path = source.path
    origin = composition.policy_origins.get((source.replica, path))
    if origin is not None:
        return f"{source.replica}: {policy_origin_text(origin, path)}, {origin.location.place()}"
    result = composition.master if source.replica == "master" else composition.worker
    location: Location | None = result.locate(path) if result is not None else None
    if location is None:
        return f"{source.replica}: {format_path(path)}, set by no layer"
    where = f"{location.layer}, {location.place()}" if location.layer else location.place()
    return f"{source.replica}: {where}"


def _setting_text(org: Org, composition: Composition, source: SettingSource) -> str:
    found = org.settings_of(composition.view)[1]
    if found is None or source.key not in found.data:
        return f"cluster setting {source.key} (default)"
    key: Path = (source.key,)
    project = composition.view.project
    if source.key == "queues" and project is not None and (source.key, project) in found.lines:
        key = (source.key, project)
    line = found.lines.get(key)
    place = Location(found.file, line[0] if line else None).place()
    return f"cluster setting {source.key} ({place})"


def origin_text(org: Org, composition: Composition, source: Source | None) -> str | None:
    """The comment ``manifests --annotate`` writes for a value of ``source`` (``None``: no comment)."""
    if isinstance(source, SpecSource):
        return _spec_text(composition, source)
    if isinstance(source, SettingSource):
        return _setting_text(org, composition, source)
    if isinstance(source, Derived):
        return source.reason
    return None


def origin_comments(org: Org, composition: Composition) -> list[Comment]:
    """For each object of the composition, the comment of the value at a path (its nearest source's text)."""
    found = composition.manifests
    if found is None:
        return []

    def of(index: int) -> Comment:
        def comment(path: ObjectPath) -> str | None:
            return origin_text(org, composition, found.source_of(index, path))

        return comment

    return [of(i) for i in range(len(found.objects))]
