"""The rules the CI formats name: one stable id per rule the engine applies, with its descriptions.

The id comes from what identifies a rule in the engine's records (never from a message):

- a compliance issue (:class:`~template_engine.runnable.RunnableIssue` with ``rule``, POLICY.md): Run:ai's
  ``PolicyRuleEnum`` value, ``policy/max``;
- an object the cluster refuses (``check``, docs/cluster.md "Validity"): ``cluster/<check>``,
  ``cluster/kubernetes.dns1123Label``;
- a mandatory field not provided (``mandatory``, runai-facts section 4): ``runnable/mandatory``;
- any other runnable issue (fields that contradict each other, Run:ai's value patterns on rendered values):
  ``runnable/consistency``;
- a pair that does not compose: ``compose/failed``; a file that is invalid: ``files/invalid``; a reference
  to something the org does not have: ``files/reference``; an org with nothing to check: ``check/no-pairs``;
- a composition warning (``WarningKind``): ``warning/<kind>``.
"""

from __future__ import annotations

from dataclasses import dataclass

from template_engine.errors import WarningKind
from template_engine.policy.check import RULE_ORDER
from template_engine.runnable import RunnableIssue

#: The section of docs/cli.md that describes every rule (``helpUri`` is ``<docs URL>#<this>``).
DOCS_ANCHOR = "rules-of-the-ci-formats"


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule as SARIF's ``reportingDescriptor`` names it: id, a name, a short and a full description."""

    id: str
    name: str
    short: str
    full: str


_POLICY_RULES: dict[str, str] = {
    "required": "the policy requires the field, and no layer sets it",
    "canEdit": "the policy does not let the request side change the field",
    "min": "the field is below the policy's minimum",
    "max": "the field is above the policy's maximum",
    "step": "the field is not a multiple of the policy's step",
    "options": "the field is not one of the policy's options",
    "canAdd": "the policy does not let the request side add items to the list",
    "locked": "the request side changed an attribute the policy locks (or an imposed data source's item)",
}

_FIXED: tuple[Rule, ...] = (
    Rule(
        "files/invalid",
        "InvalidFile",
        "A file of the org is invalid",
        "A file of the templates folder is not valid YAML, does not match its document's schema or Run:ai's "
        "value rules, or sits where no file of its kind may (`template-engine validate` says the same).",
    ),
    Rule(
        "files/reference",
        "UnknownReference",
        "A file names something the org does not have",
        "A file names a department, project, asset or template that the org does not define.",
    ),
    Rule(
        "check/no-pairs",
        "NothingToCheck",
        "There is no (project, template) pair to check",
        "The templates folder (or the project asked for) has no template that any view sees.",
    ),
    Rule(
        "compose/failed",
        "CompositionFailed",
        "The template does not compose",
        "The (project, template) pair cannot be composed: a file it reads is invalid, an expression "
        "fails, or an asset it names cannot be used from its scope.",
    ),
    Rule(
        "runnable/mandatory",
        "MandatoryField",
        "A mandatory field is not provided",
        "Run:ai refuses a workload without this field (its rule `required`): no layer sets it.",
    ),
    Rule(
        "runnable/consistency",
        "InconsistentFields",
        "The combined spec cannot be submitted",
        "Fields of the combined spec contradict each other (a request above its limit, two value sources), "
        "or a rendered value breaks one of Run:ai's value rules.",
    ),
)


def _policy_rule(name: str) -> Rule:
    return Rule(
        f"policy/{name}",
        f"Policy{name[:1].upper()}{name[1:]}",
        f"The policy's {name} rule is broken",
        f"Compliance (Run:ai's PolicyRuleEnum `{name}`): {_POLICY_RULES.get(name, 'a policy rule is broken')}"
        "; a template that breaks a rule is not runnable.",
    )


#: Every rule with a fixed id, in the order the docs list them.
CATALOGUE: dict[str, Rule] = {
    rule.id: rule for rule in (*_FIXED, *(_policy_rule(name) for name in RULE_ORDER))
}

#: The rules every composed pair is checked against (a PolicyReport's pass results); ``cluster/*`` stands
#: for all of the cluster's checks.
PAIR_RULES: tuple[str, ...] = (
    "compose/failed",
    "runnable/mandatory",
    "runnable/consistency",
    *(f"policy/{name}" for name in RULE_ORDER),
    "cluster/objects",
)


def issue_rule(issue: RunnableIssue) -> str:
    """The rule id of a runnable issue: its policy rule, its cluster check, mandatory, or consistency."""
    if issue.rule is not None:
        return f"policy/{issue.rule}"
    if issue.check is not None:
        return f"cluster/{issue.check}"
    if issue.mandatory:
        return "runnable/mandatory"
    return "runnable/consistency"


def warning_rule(kind: WarningKind) -> str:
    return f"warning/{kind.value}"


def rule(rule_id: str) -> Rule:
    """The rule of ``rule_id``: one of :data:`CATALOGUE`, a cluster check or a warning kind."""
    found = CATALOGUE.get(rule_id)
    if found is not None:
        return found
    group, _, name = rule_id.partition("/")
    if group == "cluster":
        return Rule(
            rule_id,
            "ClusterRefuses" + "".join(part[:1].upper() + part[1:] for part in name.split(".")),
            f"The cluster refuses the job's objects ({name})",
            f'The cluster objects of the composition break `{name}` (docs/cluster.md, "Validity": '
            "`schema.*` the CRD's schema, `kubernetes.*` the API server, `operator.*` the operator); the "
            "template is not runnable.",
        )
    if group == "warning":
        return Rule(
            rule_id,
            "Warning" + "".join(part.capitalize() for part in name.split("-")),
            f"Composition warning: {name.replace('-', ' ')}",
            "Something suspicious in a composition (docs/contract.md, warnings); it does not fail `check`.",
        )
    if group == "policy":
        return _policy_rule(name)
    return Rule(rule_id, rule_id, rule_id, rule_id)


def group_of(rule_id: str) -> str:
    """``policy``, ``cluster``, ``runnable``...: the part before the slash (a PolicyReport's ``category``)."""
    return rule_id.partition("/")[0]


__all__ = ["CATALOGUE", "DOCS_ANCHOR", "PAIR_RULES", "Rule", "group_of", "issue_rule", "rule", "warning_rule"]
