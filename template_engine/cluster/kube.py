"""What the Kubernetes API server checks when an operator creates pods from a pod template.

The CRD schemas carry the pod template's shape, not these rules; the API server applies them to the pods the
operator creates (and to the job's own metadata).  Read from Kubernetes itself:

- ``kubernetes/apimachinery`` ``pkg/api/validate/content/{dns,kube}.go`` (``IsDNS1123Label``,
  ``IsDNS1123Subdomain``, ``IsLabelKey`` alias ``IsQualifiedName``, ``IsLabelValue``),
  ``pkg/util/validation/validation.go`` (``IsDNS1035Label``, ``IsValidPortName``, ``IsValidPortNum``,
  ``IsRelaxedEnvVarName``, ``IsValidUserID``, ``IsValidGroupID``), ``pkg/api/resource/quantity.go``
  (``ParseQuantity``, ``parseQuantityString``, ``UnmarshalJSON``) and ``suffix.go``,
  ``pkg/api/validation/objectmeta.go`` (``ValidateObjectMetaAccessor``, ``ValidateAnnotations``,
  ``TotalAnnotationSizeLimitB``), ``pkg/apis/meta/v1/validation/validation.go`` (``ValidateLabels``);
- ``kubernetes/kubernetes`` ``pkg/apis/core/validation/validation.go`` (``ValidatePodSpec`` and the
  functions named in each docstring below).

Input is the object as submitted, before defaulting: a field that is absent is defaulted by the server and
not checked here; a field of the wrong type is the schema's business and is skipped.  Nothing here raises.
Go measures strings in bytes, so lengths are UTF-8 byte counts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import MAX_EMAX, MIN_EMIN, ROUND_CEILING, ROUND_UP, Context, Decimal, localcontext
from typing import Any

from template_engine.cluster.problems import ObjectPath, ObjectProblem

#: A name predicate: ``None`` when valid, else what is expected.
NamePredicate = Callable[[str], "str | None"]

_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL = re.compile(_LABEL)
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_DNS1035_LABEL = re.compile(r"[a-z](?:[-a-z0-9]*[a-z0-9])?")
_KEY_NAME = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_PORT_CHARS = re.compile(r"[-a-z0-9]+")

#: ``TotalAnnotationSizeLimitB`` in apimachinery ``objectmeta.go``: keys and values together, in bytes.
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * (1 << 10)
_MAX_INT32 = 2**31 - 1


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


# ---------------------------------------------------------------------------------------------------------
# Name predicates


def dns1123_label(s: str) -> str | None:
    """``IsDNS1123Label`` (apimachinery ``content/dns.go``): at most 63 lowercase letters, digits, ``-``;
    starts and ends with a letter or digit."""
    if _nbytes(s) > 63:
        return _max_len(63)
    if _DNS1123_LABEL.fullmatch(s) is None:
        return (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character"
        )
    return None


def dns1123_subdomain(s: str) -> str | None:
    """``IsDNS1123Subdomain`` (apimachinery ``content/dns.go``): dot-separated DNS-1123 labels, at most
    253 characters."""
    if _nbytes(s) > 253:
        return _max_len(253)
    if _DNS1123_SUBDOMAIN.fullmatch(s) is None:
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


def dns1035_label(s: str) -> str | None:
    """``IsDNS1035Label`` (apimachinery ``util/validation/validation.go``): like a DNS-1123 label but
    starting with a letter."""
    if _nbytes(s) > 63:
        return _max_len(63)
    if _DNS1035_LABEL.fullmatch(s) is None:
        return (
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character"
        )
    return None


def qualified_name(s: str) -> str | None:
    """``IsLabelKey`` (= ``IsQualifiedName``, apimachinery ``content/kube.go``): a name of at most 63
    alphanumerics, ``-``, ``_``, ``.`` (alphanumeric at both ends), with an optional DNS-1123 subdomain
    prefix and ``/``."""
    parts = s.split("/")
    if len(parts) > 2:
        return "must have at most one '/' (an optional DNS subdomain prefix, e.g. 'example.com/MyName')"
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            return "prefix part must be non-empty"
        if (problem := dns1123_subdomain(parts[0])) is not None:
            return f"prefix part {problem}"
    if not name:
        return "name part must be non-empty"
    if _nbytes(name) > 63:
        return f"name part {_max_len(63)}"
    if _KEY_NAME.fullmatch(name) is None:
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character"
        )
    return None


def label_value(s: str) -> str | None:
    """``IsLabelValue`` (apimachinery ``content/kube.go``): empty, or at most 63 alphanumerics, ``-``,
    ``_``, ``.`` with an alphanumeric at both ends."""
    if _nbytes(s) > 63:
        return _max_len(63)
    if s and _KEY_NAME.fullmatch(s) is None:
        return (
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


def port_name(s: str) -> str | None:
    """``IsValidPortName`` (IANA_SVC_NAME, apimachinery ``util/validation/validation.go``): at most 15
    lowercase letters, digits and ``-``, at least one letter, no ``--``, no ``-`` at either end."""
    if _nbytes(s) > 15:
        return _max_len(15)
    if _PORT_CHARS.fullmatch(s) is None:
        return "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
    if not any("a" <= c <= "z" for c in s):
        return "must contain at least one letter (a-z)"
    if "--" in s:
        return "must not contain consecutive hyphens"
    if s[0] == "-" or s[-1] == "-":
        return "must not begin or end with a hyphen"
    return None


def env_var_name(s: str) -> str | None:
    """``IsRelaxedEnvVarName`` (apimachinery ``util/validation/validation.go``): non-empty printable ASCII
    but ``=``.  This is the rule since Kubernetes 1.32 (``RelaxedEnvironmentVariableValidation`` beta, on by
    default; GA and locked on in 1.34, ``pkg/features/kube_features.go``); older servers use
    ``IsEnvVarName`` (``[-._a-zA-Z][-._a-zA-Z0-9]*``)."""
    if not s:
        return "environment variable name must be non-empty"
    if any(not (" " <= c <= "~") or c == "=" for c in s):
        return (
            "a valid environment variable name must consist only of printable ASCII characters other than '='"
        )
    return None


_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DECIMAL_SUFFIX = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_INT64 = re.compile(r"[+-]?[0-9]+")


def _scan_quantity(s: str) -> tuple[bool, str, str, str] | None:
    """``parseQuantityString`` (apimachinery ``pkg/api/resource/quantity.go``), step by step as Go does it:
    (positive, integer digits, fraction digits, suffix), or ``None`` when the text is refused."""
    end, pos, positive = len(s), 0, True
    if pos < end and s[0] in "+-":
        positive, pos = s[0] == "+", 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and "0" <= s[pos] <= "9":
        pos += 1
    num, denom = s[start:pos] or "0", ""
    if pos < end and s[pos] == ".":
        pos += 1
        start = pos
        while pos < end and "0" <= s[pos] <= "9":
            pos += 1
        denom = s[start:pos]
    suffix_start = pos
    while pos < end and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and "0" <= s[pos] <= "9":
        pos += 1
    if pos < end:
        return None
    return positive, num, denom, s[suffix_start:]


def _suffix(suffix: str) -> tuple[int, int] | None:
    """``suffixHandler.interpret`` (apimachinery ``suffix.go``): (base, exponent), or ``None``."""
    if suffix in _DECIMAL_SUFFIX:
        return 10, _DECIMAL_SUFFIX[suffix]
    if suffix in _BINARY_SUFFIX:
        return 2, _BINARY_SUFFIX[suffix]
    if len(suffix) > 1 and suffix[0] in "eE" and _INT64.fullmatch(suffix[1:]):
        parsed = int(suffix[1:])  # fullmatch above: digits only; int64 bounds checked next
        if -(2**63) <= parsed < 2**63:
            return 10, (parsed + 2**31) % 2**32 - 2**31  # Go's int32(parsed)
    return None


def quantity(s: str) -> str | None:
    """``ParseQuantity`` (apimachinery ``pkg/api/resource/quantity.go``): ``[+-]digits[.digits]`` then a
    suffix (``n u m "" k M G T P E``, ``Ki Mi Gi Ti Pi Ei``, or ``e``/``E`` and an integer exponent); no
    blanks.  Go's scanner accepts oddities such as ``"."``, ``"+"`` and ``"Mi"`` (all zero): so does this.

    Not the project's ``template_engine.quantity`` grammar, which follows Run:ai's API (no ``-``, a bounded
    exponent, surrounding blanks stripped): a different door with different rules.
    """
    if _quantity_value(s) is None:
        return "must be a quantity: a number with an optional suffix (e.g. '500m', '1Gi', '2', '1e3')"
    return None


def _quantity_value(s: str) -> Decimal | None:
    """The value Kubernetes keeps (non-zero values rounded away from zero to a whole nano), or ``None``."""
    if not s:
        return None
    scanned = _scan_quantity(s)
    if scanned is None:
        return None
    positive, num, denom, suffix = scanned
    interpreted = _suffix(suffix)
    if interpreted is None:
        return None
    base, exponent = interpreted
    context = Context(prec=len(num) + len(denom) + 40, Emax=MAX_EMAX, Emin=MIN_EMIN)
    with localcontext(context):
        value = Decimal(f"{num}.{denom or '0'}")
        value = value.scaleb(exponent) if base == 10 else value * (2**exponent)
        if value and value.as_tuple().exponent < -9:  # type: ignore[operator]
            value = value.quantize(Decimal("1e-9"), rounding=ROUND_UP)
        return value if positive else -value


def _json_quantity(value: object) -> Decimal | bool | None:
    """A quantity field as the server decodes it (``Quantity.UnmarshalJSON``: the JSON text, trimmed):
    its value, ``None`` when refused, ``False`` when the type is not one the schema allows (skipped)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        try:
            text = str(value)
        except ValueError:  # beyond Python's digit limit for int -> str
            return False
    elif isinstance(value, float):
        if not math.isfinite(value):
            return False
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        return False
    return _quantity_value(text)


# ---------------------------------------------------------------------------------------------------------
# Small readers of JSON-like input


def _map(value: object) -> Mapping[str, Any] | None:
    return value if type(value) is dict or isinstance(value, Mapping) else None  # the exact type first


def _seq(value: object) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Problems:
    """The problems of one object, collected in order."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.found: list[ObjectProblem] = []

    def add(self, path: ObjectPath, rule: str, message: str) -> None:
        self.found.append(ObjectProblem(self.kind, path, f"kubernetes.{rule}", message))

    def check(self, path: ObjectPath, rule: str, predicate: NamePredicate, value: object) -> None:
        if isinstance(value, str) and (message := predicate(value)) is not None:
            self.add(path, rule, message)

    def required(self, path: ObjectPath, value: object) -> bool:
        """``field.Required`` for an empty string (a field the schema leaves optional is passed as ``""``
        when absent, as Go decodes it); ``True`` when a non-empty string is there."""
        if value == "":
            self.add(path, "required", "must be set")
            return False
        return isinstance(value, str)


_RULE_OF: dict[Callable[[str], str | None], str] = {
    dns1123_label: "dns1123Label",
    dns1123_subdomain: "dns1123Subdomain",
    dns1035_label: "dns1035Label",
}


# ---------------------------------------------------------------------------------------------------------
# Metadata


def _labels(out: _Problems, at: ObjectPath, labels: object) -> None:
    """``ValidateLabels`` (apimachinery ``pkg/apis/meta/v1/validation``): keys qualified names, values
    label values."""
    for key, value in (_map(labels) or {}).items():
        if isinstance(key, str):
            if (message := qualified_name(key)) is not None:
                out.add((*at, key), "labelKey", message)
            if isinstance(value, str) and (message := label_value(value)) is not None:
                out.add((*at, key), "labelValue", message)


def _annotations(out: _Problems, at: ObjectPath, annotations: object) -> None:
    """``ValidateAnnotations`` (apimachinery ``pkg/api/validation/objectmeta.go``): keys qualified names
    once lowercased; keys and values together at most 256 KiB."""
    total = 0
    for key, value in (_map(annotations) or {}).items():
        if not isinstance(key, str):
            continue
        out.check((*at, key), "annotationKey", qualified_name, key.lower())
        total += _nbytes(key) + (_nbytes(value) if isinstance(value, str) else 0)
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        out.add(at, "annotationsSize", f"must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} bytes")


def _metadata(out: _Problems, at: ObjectPath, metadata: Mapping[str, Any], name: NamePredicate) -> None:
    rule = _RULE_OF.get(name, "name")
    generate = metadata.get("generateName")
    if isinstance(generate, str) and generate:
        # NameIsDNSSubdomain(name, prefix=true) masks a trailing dash: generated characters follow it.
        out.check((*at, "generateName"), rule, name, generate[:-1] + "a" if generate[-1] == "-" else generate)
    value = metadata.get("name")
    if value is None or value == "":
        if not (isinstance(generate, str) and generate):
            out.add((*at, "name"), "required", "name or generateName is required")
    else:
        out.check((*at, "name"), rule, name, value)
    namespace = metadata.get("namespace")
    if namespace:
        out.check((*at, "namespace"), "dns1123Label", dns1123_label, namespace)
    _labels(out, (*at, "labels"), metadata.get("labels"))
    _annotations(out, (*at, "annotations"), metadata.get("annotations"))


def metadata_problems(
    kind: str, at: ObjectPath, metadata: Mapping[str, Any], name: NamePredicate = dns1123_subdomain
) -> list[ObjectProblem]:
    """``ValidateObjectMetaAccessor`` (apimachinery ``pkg/api/validation/objectmeta.go``) of an object's
    ``metadata`` at ``at``: the name (or generateName) by ``name``, a DNS-1123 subdomain by default (as the
    API server checks custom resources), the namespace a DNS-1123 label, labels, annotations."""
    out = _Problems(kind)
    _metadata(out, at, metadata, name)
    return out.found


# ---------------------------------------------------------------------------------------------------------
# Volumes

#: The sources of ``validateVolumeSource``, in its order (the first one counts, the others are refused).
VOLUME_SOURCES = (
    "emptyDir", "hostPath", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs", "iscsi",
    "glusterfs", "flocker", "persistentVolumeClaim", "rbd", "cinder", "cephfs", "quobyte", "downwardAPI",
    "fc", "flexVolume", "configMap", "azureFile", "vsphereVolume", "photonPersistentDisk", "portworxVolume",
    "azureDisk", "storageos", "projected", "scaleIO", "csi", "ephemeral", "image",
)  # fmt: skip
_HOST_PATH_TYPES = frozenset(
    {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"}
)
_FILE_MODE = "must be a number between 0 and 0777 (octal), both inclusive"


def _file_mode(out: _Problems, path: ObjectPath, value: object) -> None:
    mode = _int(value)
    if mode is not None and not 0 <= mode <= 0o777:
        out.add(path, "fileMode", _FILE_MODE)


def _items(out: _Problems, at: ObjectPath, items: object) -> None:
    """``validateKeyToPath``: each item's mode."""
    for i, item in enumerate(_seq(items)):
        if (entry := _map(item)) is not None:
            _file_mode(out, (*at, i, "mode"), entry.get("mode"))


def _no_backsteps(out: _Problems, path: ObjectPath, value: str) -> None:
    """``validatePathNoBacksteps``: no ``..`` element."""
    if ".." in value.replace("\\", "/").split("/"):
        out.add(path, "pathBacksteps", "must not contain '..'")


def _volume_source(out: _Problems, at: ObjectPath, key: str, source: Mapping[str, Any]) -> None:
    """The checks of the one source this project emits: ``validateHostPathVolumeSource``,
    ``validateSecretVolumeSource``, ``validateConfigMapVolumeSource``,
    ``validatePersistentClaimVolumeSource``, ``validateNFSVolumeSource``, ``validateProjectedVolumeSource``,
    ``validateDownwardAPIVolumeSource`` and
    the emptyDir ``sizeLimit``.  Secret, configMap and claim names are only required here, not checked
    for their format (Kubernetes checks the format where the object itself is created)."""
    path = (*at, key)
    if key == "hostPath":
        if out.required((*path, "path"), source.get("path")):
            _no_backsteps(out, (*path, "path"), source["path"])
        kind = source.get("type")
        if isinstance(kind, str) and kind not in _HOST_PATH_TYPES:
            out.add((*path, "type"), "hostPathType", f"must be one of {sorted(_HOST_PATH_TYPES - {''})}")
    elif key == "secret":
        out.required((*path, "secretName"), source.get("secretName", ""))
        _file_mode(out, (*path, "defaultMode"), source.get("defaultMode"))
        _items(out, (*path, "items"), source.get("items"))
    elif key == "configMap":
        out.required((*path, "name"), source.get("name", ""))
        _file_mode(out, (*path, "defaultMode"), source.get("defaultMode"))
        _items(out, (*path, "items"), source.get("items"))
    elif key == "persistentVolumeClaim":
        out.required((*path, "claimName"), source.get("claimName"))
    elif key == "nfs":
        out.required((*path, "server"), source.get("server"))
        nfs_path = source.get("path")
        if out.required((*path, "path"), nfs_path) and not str(nfs_path).startswith("/"):
            out.add((*path, "path"), "absolutePath", "must be an absolute path")
    elif key in ("projected", "downwardAPI"):
        _file_mode(out, (*path, "defaultMode"), source.get("defaultMode"))
    elif key == "emptyDir" and "sizeLimit" in source:
        _quantity_field(out, (*path, "sizeLimit"), source["sizeLimit"])


def _volumes(out: _Problems, at: ObjectPath, volumes: object) -> set[str]:
    """``ValidateVolumes``: names DNS-1123 labels and unique, exactly one source each.  Returns the names
    of the volumes without problems: only those can be mounted (``IsMatchedVolume``)."""
    good: set[str] = set()
    seen: set[str] = set()
    for i, item in enumerate(_seq(volumes)):
        volume = _map(item)
        if volume is None:
            continue
        before = len(out.found)
        path = (*at, i)
        name = volume.get("name")
        if out.required((*path, "name"), name):
            out.check((*path, "name"), "dns1123Label", dns1123_label, name)
            if name in seen:
                out.add((*path, "name"), "uniqueVolumeName", f"duplicate volume name {name!r}")
        given = [key for key in VOLUME_SOURCES if _map(volume.get(key)) is not None]
        if not given:
            out.add(path, "volumeSource", "must specify a volume type")
        for extra in given[1:]:
            out.add((*path, extra), "volumeSource", "may not specify more than 1 volume type")
        if given:
            _volume_source(out, path, given[0], volume[given[0]])
        if isinstance(name, str):
            seen.add(name)
            if len(out.found) == before:
                good.add(name)
    return good


# ---------------------------------------------------------------------------------------------------------
# Resources


def _native(name: str) -> bool:
    """``IsNativeResource`` (``pkg/apis/core/helper``): no domain, or a ``kubernetes.io/`` one."""
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    """``IsExtendedResourceName``: not native, not ``requests.``-prefixed, and ``requests.<name>`` a
    qualified name."""
    return (
        not _native(name) and not name.startswith("requests.") and qualified_name(f"requests.{name}") is None
    )


def _overcommit_allowed(name: str) -> bool:
    """``IsOvercommitAllowed``: native and not hugepages."""
    return _native(name) and not name.startswith("hugepages-")


def _resource_name(name: str) -> str | None:
    """``validateContainerResourceName`` (via ``validateResourceName``)."""
    if (problem := qualified_name(name)) is not None:
        return problem
    if "/" not in name:
        if name not in ("cpu", "memory", "ephemeral-storage") and not name.startswith("hugepages-"):
            return "must be a standard resource for containers"
    elif not _native(name) and not _extended(name):
        return "doesn't follow extended resource name standard"
    return None


def _quantity_field(out: _Problems, path: ObjectPath, raw: object) -> Decimal | None:
    value = _json_quantity(raw)
    if value is False:
        return None
    if not isinstance(value, Decimal):
        out.add(path, "quantity", "must be a Kubernetes quantity (e.g. '500m', '1Gi', '2')")
        return None
    if value < 0:
        out.add(path, "nonNegativeQuantity", "must be greater than or equal to 0")
    return value


def _integral(value: Decimal) -> bool:
    """``ValidateResourceQuantityValue``'s ``MilliValue() % 1000 == 0``: the value rounded up to a milli."""
    with localcontext(Context(prec=len(value.as_tuple().digits) + 40, Emax=MAX_EMAX, Emin=MIN_EMIN)):
        milli = (value * 1000).to_integral_value(rounding=ROUND_CEILING)
        return (milli / 1000) == (milli / 1000).to_integral_value()


def _resource_list(out: _Problems, at: ObjectPath, raw: object) -> dict[str, Decimal]:
    values: dict[str, Decimal] = {}
    for name, quantity_ in (_map(raw) or {}).items():
        if not isinstance(name, str):
            continue
        path = (*at, name)
        if (problem := _resource_name(name)) is not None:
            out.add(path, "resourceName", problem)
        value = _quantity_field(out, path, quantity_)
        if value is None:
            continue
        if _extended(name) and not _integral(value):
            out.add(path, "integerResource", "must be an integer")
        values[name] = value
    return values


def _resources(out: _Problems, at: ObjectPath, resources: Mapping[str, Any]) -> None:
    """``validateResourceRequirements``: every quantity valid and not negative, extended resources whole,
    requests at most the limits; for resources that cannot be overcommitted (extended, hugepages) a request
    needs a limit, and equal to it."""
    limits = _resource_list(out, (*at, "limits"), resources.get("limits"))
    requests = _resource_list(out, (*at, "requests"), resources.get("requests"))
    for name, request in requests.items():
        path = (*at, "requests", name)
        limit = limits.get(name)
        raw_limits = _map(resources.get("limits")) or {}
        if limit is None:
            if name not in raw_limits and not _overcommit_allowed(name):
                out.add(
                    (*at, "limits"),
                    "limitRequired",
                    f"must set a limit for {name} (it cannot be overcommitted)",
                )
        elif not _overcommit_allowed(name) and request != limit:
            out.add(path, "requestsEqualLimits", f"must be equal to the {name} limit")
        elif request > limit:
            out.add(path, "requestsWithinLimits", f"must be less than or equal to the {name} limit")


# ---------------------------------------------------------------------------------------------------------
# Containers

_PROTOCOLS = frozenset({"TCP", "UDP", "SCTP"})
_PULL_POLICIES = frozenset({"Always", "IfNotPresent", "Never"})


def _ports(out: _Problems, at: ObjectPath, ports: object) -> None:
    """``validateContainerPorts``: names IANA_SVC_NAMEs unique within the container, container ports and
    host ports in 1..65535, the protocol TCP, UDP or SCTP."""
    names: set[str] = set()
    for i, item in enumerate(_seq(ports)):
        port = _map(item)
        if port is None:
            continue
        path = (*at, i)
        name = port.get("name")
        if isinstance(name, str) and name:
            if (problem := port_name(name)) is not None:
                out.add((*path, "name"), "portName", problem)
            elif name in names:
                out.add((*path, "name"), "uniquePortName", f"duplicate port name {name!r} in this container")
            else:
                names.add(name)
        for key in ("containerPort", "hostPort"):
            number = _int(port.get(key))
            if number is None or (key == "hostPort" and number == 0):
                continue
            if number == 0:
                out.add((*path, key), "required", "must be set")
            elif not 1 <= number <= 65535:
                out.add((*path, key), "portNumber", "must be between 1 and 65535, inclusive")
        protocol = port.get("protocol")
        if isinstance(protocol, str) and protocol and protocol not in _PROTOCOLS:
            out.add((*path, "protocol"), "protocol", f"must be one of {sorted(_PROTOCOLS)}")


def _env(out: _Problems, at: ObjectPath, env: object) -> None:
    """``ValidateEnv``: names (``IsRelaxedEnvVarName``); ``validateConfigMapKeySelector`` and
    ``validateSecretKeySelector``: the referenced name a DNS-1123 subdomain (``ValidateSecretName``)."""
    for i, item in enumerate(_seq(env)):
        var = _map(item)
        if var is None:
            continue
        name = var.get("name")
        if name == "":
            out.add((*at, i, "name"), "required", "must be set")  # field.Required, as _Problems.required
        elif isinstance(name, str) and (message := env_var_name(name)) is not None:
            out.add((*at, i, "name"), "envVarName", message)
        value_from = _map(var.get("valueFrom"))
        if value_from is None:  # no reference to check (most variables have a value)
            continue
        for ref in ("configMapKeyRef", "secretKeyRef"):
            selector = _map(value_from.get(ref))
            if selector is not None:
                ref_path = (*at, i, "valueFrom", ref, "name")
                out.check(ref_path, "dns1123Subdomain", dns1123_subdomain, selector.get("name", ""))


def _mounts(out: _Problems, at: ObjectPath, mounts: object, volumes: set[str]) -> None:
    """``ValidateVolumeMounts``: each mount names a valid pod volume; mount paths present and unique within
    the container."""
    paths: set[str] = set()
    for i, item in enumerate(_seq(mounts)):
        mount = _map(item)
        if mount is None:
            continue
        name = mount.get("name")
        if isinstance(name, str):
            out.required((*at, i, "name"), name)
            if name not in volumes:
                out.add((*at, i, "name"), "mountVolume", f"names no volume of the pod: {name!r}")
        mount_path = mount.get("mountPath")
        if isinstance(mount_path, str):
            out.required((*at, i, "mountPath"), mount_path)
            if mount_path in paths:
                out.add((*at, i, "mountPath"), "uniqueMountPath", "must be unique")
            paths.add(mount_path)


def _ids(out: _Problems, at: ObjectPath, context: Mapping[str, Any], keys: Sequence[str]) -> None:
    """``IsValidUserID`` / ``IsValidGroupID``: 0..2147483647."""
    for key in keys:
        values = context.get(key)
        for j, value in enumerate(values) if isinstance(values, list) else [(None, values)]:
            number = _int(value)
            if number is not None and not 0 <= number <= _MAX_INT32:
                path = (*at, key) if j is None else (*at, key, j)
                out.add(path, "userOrGroupId", f"must be between 0 and {_MAX_INT32}, inclusive")


def _security_context(out: _Problems, at: ObjectPath, context: Mapping[str, Any]) -> None:
    """``ValidateSecurityContext`` (``pkg/apis/core/validation/validation.go``): user and group ids in
    range; ``allowPrivilegeEscalation: false`` with neither ``privileged: true`` nor ``CAP_SYS_ADMIN``."""
    _ids(out, at, context, ("runAsUser", "runAsGroup"))
    if context.get("allowPrivilegeEscalation") is False:
        if context.get("privileged") is True:
            out.add(
                at,
                "privilegeEscalation",
                "cannot set allowPrivilegeEscalation to false and privileged to true",
            )
        added = _seq((_map(context.get("capabilities")) or {}).get("add"))
        if "CAP_SYS_ADMIN" in added:
            out.add(
                at,
                "privilegeEscalation",
                "cannot set allowPrivilegeEscalation to false and add CAP_SYS_ADMIN",
            )


def _container(out: _Problems, at: ObjectPath, container: Mapping[str, Any], volumes: set[str]) -> None:
    """``validateContainerCommon``: the name a DNS-1123 label, an image, ports, env, mounts, the pull policy,
    resources and the security context."""
    name = container.get("name")
    if out.required((*at, "name"), name):
        out.check((*at, "name"), "dns1123Label", dns1123_label, name)
    image = container.get("image")
    if image is None or image == "":
        out.add((*at, "image"), "required", "must be set")
    _ports(out, (*at, "ports"), container.get("ports"))
    _env(out, (*at, "env"), container.get("env"))
    _mounts(out, (*at, "volumeMounts"), container.get("volumeMounts"), volumes)
    policy = container.get("imagePullPolicy")
    if isinstance(policy, str) and policy and policy not in _PULL_POLICIES:
        out.add((*at, "imagePullPolicy"), "imagePullPolicy", f"must be one of {sorted(_PULL_POLICIES)}")
    if (resources := _map(container.get("resources"))) is not None:
        _resources(out, (*at, "resources"), resources)
    if (context := _map(container.get("securityContext"))) is not None:
        _security_context(out, (*at, "securityContext"), context)


def _containers(out: _Problems, at: ObjectPath, spec: Mapping[str, Any], volumes: set[str]) -> None:
    """``validateContainers`` and ``validateInitContainers``: every container, names unique across both
    lists (an init container may not reuse a regular container's name)."""
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        for i, item in enumerate(_seq(spec.get(key))):
            container = _map(item)
            if container is None:
                continue
            _container(out, (*at, key, i), container, volumes)
            name = container.get("name")
            if isinstance(name, str):
                if name in names:
                    out.add(
                        (*at, key, i, "name"), "uniqueContainerName", f"duplicate container name {name!r}"
                    )
                elif name:
                    names.add(name)


# ---------------------------------------------------------------------------------------------------------
# The pod spec

_RESTART_POLICIES = frozenset({"Always", "OnFailure", "Never"})
_DNS_POLICIES = frozenset({"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"})
_TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})


def _tolerations(out: _Problems, at: ObjectPath, tolerations: object) -> None:
    """``ValidateTolerations``: the key a qualified name (an empty key needs ``Exists``); ``Equal`` takes a
    label value, ``Exists`` no value; ``tolerationSeconds`` only with ``NoExecute``; the effect one of
    ``NoSchedule``, ``PreferNoSchedule``, ``NoExecute``."""
    for i, item in enumerate(_seq(tolerations)):
        toleration = _map(item)
        if toleration is None:
            continue
        path = (*at, i)
        key, operator = toleration.get("key") or "", toleration.get("operator") or ""
        value, effect = toleration.get("value") or "", toleration.get("effect") or ""
        if key:
            out.check((*path, "key"), "labelKey", qualified_name, key)
        elif operator != "Exists":
            out.add((*path, "operator"), "tolerationOperator", "must be Exists when key is empty")
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            out.add((*path, "effect"), "tolerationSeconds", "must be NoExecute when tolerationSeconds is set")
        if operator in ("Equal", ""):
            out.check((*path, "value"), "labelValue", label_value, value)
        elif operator == "Exists":
            if value:
                out.add((*path, "value"), "tolerationValue", "must be empty when operator is Exists")
        elif isinstance(operator, str):
            out.add((*path, "operator"), "tolerationOperator", "must be Equal or Exists")
        if isinstance(effect, str) and effect and effect not in _TAINT_EFFECTS:
            out.add((*path, "effect"), "taintEffect", f"must be one of {sorted(_TAINT_EFFECTS)}")


def _enum(out: _Problems, path: ObjectPath, rule: str, value: object, allowed: frozenset[str]) -> None:
    if isinstance(value, str) and value and value not in allowed:
        out.add(path, rule, f"must be one of {sorted(allowed)}")


def _pod_spec(out: _Problems, at: ObjectPath, spec: Mapping[str, Any]) -> None:
    """``ValidatePodSpec`` (``pkg/apis/core/validation/validation.go``), the parts a pod template of this
    project can reach.  ``schedulerName``, ``imagePullSecrets`` names and the sign of
    ``terminationGracePeriodSeconds`` are not checked there, so not here either."""
    volumes = _volumes(out, (*at, "volumes"), spec.get("volumes"))
    _containers(out, at, spec, volumes)
    _enum(out, (*at, "restartPolicy"), "restartPolicy", spec.get("restartPolicy"), _RESTART_POLICIES)
    _enum(out, (*at, "dnsPolicy"), "dnsPolicy", spec.get("dnsPolicy"), _DNS_POLICIES)
    _labels(out, (*at, "nodeSelector"), spec.get("nodeSelector"))
    if (context := _map(spec.get("securityContext"))) is not None:
        _ids(
            out,
            (*at, "securityContext"),
            context,
            ("runAsUser", "runAsGroup", "fsGroup", "supplementalGroups"),
        )
    for key in ("serviceAccountName", "priorityClassName"):
        if spec.get(key):
            out.check((*at, key), "dns1123Subdomain", dns1123_subdomain, spec[key])
    for key in ("hostname", "subdomain"):
        if spec.get(key):
            out.check((*at, key), "dns1123Label", dns1123_label, spec[key])
    deadline = _int(spec.get("activeDeadlineSeconds"))
    if deadline is not None and not 1 <= deadline <= _MAX_INT32:
        out.add(
            (*at, "activeDeadlineSeconds"), "activeDeadlineSeconds", f"must be between 1 and {_MAX_INT32}"
        )
    _tolerations(out, (*at, "tolerations"), spec.get("tolerations"))


def pod_template_problems(kind: str, at: ObjectPath, template: Mapping[str, Any]) -> list[ObjectProblem]:
    """``ValidatePodTemplateSpec`` of the template at ``at`` (e.g. ``("spec", "pytorchReplicaSpecs",
    "Worker", "template")``), with paths from the object's root: the template's labels and annotations
    (its name and namespace are the operator's to set), then the pod spec."""
    out = _Problems(kind)
    metadata = _map(template.get("metadata")) or {}
    _labels(out, (*at, "metadata", "labels"), metadata.get("labels"))
    _annotations(out, (*at, "metadata", "annotations"), metadata.get("annotations"))
    if (spec := _map(template.get("spec"))) is not None:
        _pod_spec(out, (*at, "spec"), spec)
    return out.found


__all__ = [
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "VOLUME_SOURCES",
    "NamePredicate",
    "dns1035_label",
    "dns1123_label",
    "dns1123_subdomain",
    "env_var_name",
    "label_value",
    "metadata_problems",
    "pod_template_problems",
    "port_name",
    "qualified_name",
    "quantity",
]
