"""The CI formats of ``check`` and ``diff`` (docs/cli.md): SARIF 2.1.0, JUnit XML, the Kubernetes
PolicyReport, a pull-request comment in Markdown.

Pure builders: the engine's records become :class:`~.model.CheckReport` values (:mod:`.findings`), and each
format is written from those (:mod:`.sarif`, :mod:`.junit`, :mod:`.policy_report`, :mod:`.markdown`); the
CLI only chooses one and prints it.  :mod:`.markdown` (``diff``'s comment) is imported from its module, so
that ``check`` does not import the diff.
"""

from template_engine.reports.findings import (
    composition_findings,
    job_ref,
    problem_finding,
    warning_findings,
)
from template_engine.reports.junit import junit_xml
from template_engine.reports.model import CheckReport, Finding, JobRef, PairResult
from template_engine.reports.policy_report import policy_reports
from template_engine.reports.sarif import sarif_log

__all__ = [
    "CheckReport",
    "Finding",
    "JobRef",
    "PairResult",
    "composition_findings",
    "job_ref",
    "junit_xml",
    "policy_reports",
    "problem_finding",
    "sarif_log",
    "warning_findings",
]
