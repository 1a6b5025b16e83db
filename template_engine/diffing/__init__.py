"""What ``diff`` and ``impact`` compare: the (view, template) pairs of an org and what each composes to
(:mod:`~template_engine.diffing.pairs`), and how two effective outputs differ, field by field
(:mod:`~template_engine.diffing.fields`).  :mod:`template_engine.diff` compares two orgs with them; the
snapshot plugin records and compares the same pairs.  Pure: nothing here reads files.
"""
