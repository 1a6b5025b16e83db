"""Effective-spec snapshots for pytest: the snapshot file of a pair (:mod:`~.document`) and the syrupy
extension that keeps those files in one folder at the top of a repository (:mod:`~.extension`, loaded only by
the pytest plugin).  The pairs themselves and the field-by-field comparison are in
:mod:`template_engine.diffing`.
"""
