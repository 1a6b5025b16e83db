"""Expressions are bounded: nothing a template author writes can hang or exhaust the composing process."""

from __future__ import annotations

import time

import pytest
from jinja2.exceptions import SecurityError

from template_engine.render import render_string

CONTEXT = {"project": {"name": "vision"}}


@pytest.mark.parametrize(
    "text",
    [
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        "{% macro m() %}x{% endmacro %}{{ m() }}",
        "{{ '%1000000000d' % 1 }}",
        "{{ '{:>1000000000}'.format(1) }}",
        "{{ 'x' * 1000000000 }}",
        "{{ 2 ** 256 ** 256 ** 256 }}",
        "{{ ('x' * 100000) | replace('x', 'x' * 1000) }}",
        "{{ ''.__class__ }}",
        "{{ 'x'.ljust(500000000) }}",
        "{{ ('x' * 1000).replace('x', 'y' * 1000) }}",
        "{{ ('x' * 1000) | join('y' * 1000) }}",
        "{{ ('x' * 6000) + ('x' * 6000) }}",
        "{{ range(100000) | list }}",
        "{% set s = 'x' * 10000 %}{{ s }}",
        "{{ 'a' ~ 'b' }}",
        "{{ '{{' * 2 }}" + "x" * 5000,
    ],
)
def test_an_unbounded_expression_is_refused_quickly(text: str) -> None:
    start = time.perf_counter()
    with pytest.raises(SecurityError):
        render_string(text, CONTEXT)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("name", ["center", "format", "wordwrap", "indent"])
def test_filters_of_unbounded_cost_are_not_available(name: str) -> None:
    with pytest.raises(Exception, match=f"No filter named '{name}'"):
        render_string(f"{{{{ 'x' | {name}(1000000000) }}}}", CONTEXT)


@pytest.mark.parametrize("name", ["lipsum", "cycler", "joiner", "namespace"])
def test_globals_that_generate_values_are_not_available(name: str) -> None:
    with pytest.raises(Exception, match=f"'{name}' is undefined"):
        render_string(f"{{{{ {name}(100000) }}}}", CONTEXT)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/home/{{ project.name }}", "/home/vision"),
        ("{% if project.name == 'vision' %}cv{% else %}other{% endif %}", "cv"),
        ("{{ 'A-B'.lower().split('-') | join('_') }}", "a_b"),
        ("{{ range(3) | list }}", "[0, 1, 2]"),
        ("{{ user | default('bot') | upper }}", "BOT"),
        ("{{ project.name | replace('v', 'V') }}", "Vision"),
        ("{{ 2 ** 10 }}", "1024"),
    ],
)
def test_ordinary_expressions_still_render(text: str, expected: str) -> None:
    assert render_string(text, CONTEXT) == expected
