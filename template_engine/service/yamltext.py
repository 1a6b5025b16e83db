"""A stored document as the YAML text ``db export`` writes for it (one function, shared by the exporter and
by the policies, whose rules are located by their line in that text).

Written to diff quietly against the folder it was imported from (issue 31): no line is folded (a value is
on the line of its key, however long), text is plain wherever YAML reads it back as the same text, and text
that holds an expression is quoted as this project's documents write it: in single quotes, or in double
quotes when it holds a single quote (``"{{ user | default('bot') }}"``, not ``'{{ ... ''bot'' ... }}'``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe writer, with text that is not all printable written double-quoted (below)."""


def _text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    """Text as a YAML scalar that reads back as it is.

    A YAML reader takes NEL (U+0085), LS (U+2028) and PS (U+2029) for line breaks, and PyYAML writes text
    holding one in a plain or single-quoted scalar as a raw line break: read back, NEL becomes a newline
    (folded into a space, or gone).  Text holding any character that is not printable (those three, tabs,
    carriage returns, other control and format characters: zero-width and direction marks, a byte order
    mark...) is therefore written double-quoted, where the writer escapes each of them (``\\N``, ``\\L``,
    ``\\P``, ``\\t``, ``\\r``, ``\\uFEFF``...) or writes it as itself inside the quotes; ``\\n`` alone keeps
    the writer's own choice.  Printable text (letters of any script, emoji) stays as it is, readable.
    """
    style = None if text.replace("\n", "").isprintable() else '"'
    if style is None and "\n" not in text and ("{{" in text or "{%" in text):
        style = '"' if "'" in text and '"' not in text and "\\" not in text else "'"
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _text)


#: Wider than any line: PyYAML folds a long plain or quoted scalar at its width (80 by default), which split
#: expressions and descriptions over lines no author wrote.
UNFOLDED = 1 << 30


def dump_yaml(document: Mapping[str, Any]) -> str:
    """``document`` as the YAML text of an exported file: keys in their order, block style, no line folded."""
    return yaml.dump(
        dict(document),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=UNFOLDED,
    )
