"""The package's version, in the one place both the build and the program read it.

``pyproject.toml`` names :data:`VERSION` as the project's dynamic version (``[tool.setuptools.dynamic]``;
setuptools reads the literal without importing the package); ``template-engine --version`` and the service's
OpenAPI ``info.version`` print it without scanning the installed distributions (``importlib.metadata``
costs about a fifth of ``--version``'s start, docs/performance.md "Start-up (issue 20)").  Nothing else may
be imported here: the start of the program imports this module.
"""

VERSION = "0.1.0"
