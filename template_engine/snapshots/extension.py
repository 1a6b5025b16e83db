"""A syrupy extension that keeps one YAML file per pair in one folder at the top of the repository.

syrupy's own layouts put snapshots beside each test module (``--snapshot-dirname`` only renames that
folder).  Here the folder is fixed (``snapshots/`` by default) and the file is named after the pair, not the
test: ``snapshots/projects/vision/mpi-horovod.yaml``.  The test asserts with ``snapshot(name=pair_id)``; the
extension turns that name into the path, and names every snapshot ``<test function>[<pair id>]`` so that
syrupy relates it to the test (no "can not relate snapshot" warnings) and recognises the snapshots of pairs
that no longer exist as unused, to be removed by ``--snapshot-update``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from syrupy.data import Snapshot, SnapshotCollection, SnapshotCollections
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from template_engine.snapshots.document import SUFFIX

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation
    from syrupy.types import PropertyFilter, PropertyMatcher, SerializableData, SerializedData, SnapshotIndex


def _base(test_location: PyTestLocation) -> str:
    """The test's own snapshot name without its parameters: ``test_example_org``, ``TestOrg.test_pair``."""
    return test_location.snapshot_name.partition("[")[0]


class PairSnapshotExtension(SingleFileSnapshotExtension):
    """Text snapshots at ``<root>/<pair id>.yaml``; use :func:`extension_for` to get one bound to a root."""

    file_extension = SUFFIX.lstrip(".")
    _write_mode = WriteMode.TEXT
    #: The snapshots folder (absolute); set on the subclass :func:`extension_for` makes.
    root: ClassVar[str] = ""
    #: The test name the snapshots are named after, when not the asserting test's own (``None``): the test
    #: of the files keeps the snapshots of pairs whose template file is invalid under the pair tests' names.
    base: ClassVar[str | None] = None

    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> SerializedData:
        if not isinstance(data, str):
            raise TypeError(
                "a pair snapshot is the text of its file (see template_engine.snapshots.document)"
            )
        return data

    # -- where a snapshot lives ------------------------------------------------------------------------------

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return cls.root

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        return cls.root

    @classmethod
    def get_file_basename(cls, *, test_location: PyTestLocation, index: SnapshotIndex) -> str:
        if not isinstance(index, str) or not index:
            raise TypeError("assert a pair snapshot with snapshot(name=<pair id>)")
        return index

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        return f"{cls.base or _base(test_location)}[{index}]"

    @classmethod
    def matches_test_location(cls, *, test_location: PyTestLocation, snapshot_location: str) -> bool:
        return cls._pair_id(snapshot_location) is not None

    @classmethod
    def _pair_id(cls, location: str) -> str | None:
        path = Path(location)
        try:
            rel = path.relative_to(cls.root)
        except ValueError:
            return None
        return rel.as_posix()[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else None

    # -- what is there ---------------------------------------------------------------------------------------

    def discover_snapshots(
        self, *, test_location: PyTestLocation, ignore_extensions: list[str] | None = None
    ) -> SnapshotCollections:
        """Every pair snapshot under the root, named as :meth:`get_snapshot_name` names it."""
        found = SnapshotCollections()
        root = Path(self.root)
        if not root.is_dir():
            return found
        for path in sorted(root.rglob(f"*{SUFFIX}")):
            pair = self._pair_id(str(path))
            if pair is None or not path.is_file() or any(p.startswith(".") for p in path.parts[-2:]):
                continue
            collection = SnapshotCollection(location=str(path))
            collection.add(Snapshot(name=self.get_snapshot_name(test_location=test_location, index=pair)))
            found.add(collection)
        return found

    def delete_snapshots(self, *, snapshot_location: str, snapshot_names: set[str]) -> None:
        """Remove the file, and the folders it leaves empty (a removed project leaves nothing behind)."""
        path = Path(snapshot_location)
        path.unlink(missing_ok=True)
        root = Path(self.root)
        for parent in path.parents:
            if parent == root or root not in parent.parents:
                break
            try:
                parent.rmdir()
            except OSError:
                break


@functools.cache
def extension_for(root: Path, base: str | None = None) -> type[PairSnapshotExtension]:
    """The extension class bound to the snapshots folder ``root`` (one class per folder), naming snapshots
    after the test ``base`` when given (see :attr:`PairSnapshotExtension.base`)."""
    attrs: dict[str, Any] = {"root": str(root.resolve()), "base": base, "__module__": __name__}
    return cast(type[PairSnapshotExtension], type("PairSnapshotExtension", (PairSnapshotExtension,), attrs))
