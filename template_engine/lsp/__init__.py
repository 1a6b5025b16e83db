"""``template-engine lsp``: a Language Server Protocol server for a templates folder (issue 34).

An edge, like ``cli/`` and ``service/``: it adapts the engine to an editor and holds no rule of its own.
Only :mod:`.server` imports pygls and lsprotocol (the ``lsp`` extra); the other modules are plain Python
over the engine, tested without a protocol::

    buffers.py      the org as the editor sees it: the folder on disk with the unsaved buffers over it
    analysis.py     the loaded org and each pair's outcome, recomposed only where a changed file reaches
    diagnostics.py  check's and validate's problems, grouped by the place that caused them
    locate.py       a line and column of a file: the document, the field path and the layer there
    fields.py       what the value written there does in each pair: who set it, what it overrode
    hover.py        what a field's value is in each pair, who set it, what it overrode, what overrides it
    navigate.py     definition and references: the layers of a field, an asset's file, a rule's values
    complete.py     completion from the kinds' JSON Schemas and the org's names
    actions.py      code actions: exclude or override an inherited item, apply a did-you-mean
    server.py       the pygls server: the protocol, cooperative recomputation, cancellation
"""
