"""Views of a composition: the explain view (a pure view model and the Jinja2 templates that render it), the
static report of a whole org, the JSON Schemas of the documents and a starter org.

``model``  composition -> :class:`~template_engine.views.model.PageView` (pure; the service can reuse it)
``html``   view model -> HTML (Jinja2, autoescape on, no external resources)
``site``   ``template-engine report``: every pair's page and an index, written aside and put in place
``schema`` ``template-engine schema``: the JSON Schema of each document kind
``starter`` ``template-engine init``: a minimal org
"""
