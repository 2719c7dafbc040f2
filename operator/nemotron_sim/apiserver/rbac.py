"""RBAC as kube-apiserver evaluates it: pure functions over plain dicts.

- :func:`request_attributes` maps an HTTP request to what is authorized (k8s.io/apiserver
  ``RequestInfoFactory``): verb, API group, resource, subresource, name, namespace or path.
- :func:`rule_allows` and :func:`subject_matches` are ``RuleAllows`` and ``appliesToUser`` of
  plugin/pkg/auth/authorizer/rbac; :func:`authorize` and :func:`rules_for` walk ClusterRoleBindings
  then the RoleBindings of the request's namespace, as ``VisitRulesFor`` does.
- :func:`forbidden_status` is the 403 body kube-apiserver writes (responsewriters ``Forbidden``).

:mod:`.authz` wires these to the store with an index and a per-user cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Obj = Mapping[str, Any]
SPECIAL_VERBS = ("proxy", "watch")
NAMESPACE_SUBRESOURCES = ("status", "finalize")
_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


@dataclass(frozen=True)
class Attributes:
    """What a request asks to do (``authorizer.Attributes`` without the user)."""

    verb: str
    resource_request: bool = True
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    path: str = ""

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _exact_name(field_selector: str) -> str:
    """The name a ``metadata.name=X`` field selector pins, or ``""``."""
    for term in field_selector.split(","):
        for op in ("==", "="):
            key, found, value = term.partition(op)
            if found and key.strip() == "metadata.name" and "!" not in key:
                value = value.strip()
                valid = value not in ("", ".", "..") and not set(value) & {"/", "%"}
                return value if valid else ""
    return ""


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """kube-apiserver's ``NewRequestInfo``: verbs from the method, list/watch/deletecollection
    when there is no name, ``/watch/`` prefixes, the namespace of ``/namespaces/NAME``."""
    parts = [p for p in path.strip("/").split("/") if p]
    plain = Attributes(verb=method.lower(), resource_request=False, path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return plain
    group = ""
    rest = parts[1:]
    if parts[0] == "apis":
        if len(rest) < 3:
            return plain
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    via_prefix = rest[0] in SPECIAL_VERBS
    if via_prefix:
        if len(rest) < 2:
            return Attributes(verb=rest[0], api_group=group, api_version=version, path=path)
        verb, rest = rest[0], rest[1:]
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    subresource = rest[2] if len(rest) >= 3 and verb != "proxy" else ""
    name = rest[1] if len(rest) >= 2 else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch", "").lower() not in ("", "false", "0") else "list"
        name = _exact_name(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(
        verb=verb,
        api_group=group,
        api_version=version,
        resource=rest[0],
        subresource=subresource,
        name=name,
        namespace=namespace,
        path=path,
    )


# --- rules ----------------------------------------------------------------------------------


def _has(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


def _resource_matches(rule: Obj, attrs: Attributes) -> bool:
    combined, sub = attrs.combined_resource, attrs.subresource
    for resource in rule.get("resources") or []:
        if resource in ("*", combined):
            return True
        if sub and resource == f"*/{sub}":
            return True
    return False


def _url_matches(rule: Obj, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or []:
        if url in ("*", path) or (url.endswith("*") and path.startswith(url.rstrip("*"))):
            return True
    return False


def rule_allows(rule: Obj, attrs: Attributes) -> bool:
    """``RuleAllows``: whether one PolicyRule grants the request."""
    if not _has(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(rule, attrs.path)
    names = rule.get("resourceNames") or []
    return (
        _has(rule.get("apiGroups"), attrs.api_group)
        and _resource_matches(rule, attrs)
        and (not names or attrs.name in names)
    )


# --- subjects and bindings ------------------------------------------------------------------


def service_account_username(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def subject_matches(
    subject: Obj, username: str, groups: Iterable[str], binding_namespace: str
) -> bool:
    """``appliesToUser``: a ServiceAccount subject without a namespace takes the RoleBinding's."""
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(username == name)
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and username == service_account_username(namespace, name)
    return False


def describe_subject(subject: Obj, binding_namespace: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return f'ServiceAccount "{subject.get("name", "")}/{namespace}"'
    return f'{subject.get("kind")} "{subject.get("name", "")}"'


def describe_binding(binding: Obj, subject: Obj) -> str:
    """Where an allow came from, worded as the RBAC authorizer's reason."""
    md, ref = binding.get("metadata") or {}, binding.get("roleRef") or {}
    namespace = md.get("namespace") or ""
    if namespace:
        what = f'RoleBinding "{md.get("name")}/{namespace}"'
    else:
        what = f'ClusterRoleBinding "{md.get("name")}"'
    role = f'{ref.get("kind")} "{ref.get("name")}"'
    return f"{what} of {role} to {describe_subject(subject, namespace)}"


def matching_subject(binding: Obj, username: str, groups: Iterable[str]) -> Obj | None:
    namespace = (binding.get("metadata") or {}).get("namespace") or ""
    for subject in binding.get("subjects") or []:
        if subject_matches(subject, username, groups, namespace):
            return dict(subject)
    return None


# (kind, namespace, name) of a roleRef → its rules, or None if the role does not exist
RoleLookup = Callable[[str, str, str], list[Obj] | None]


def role_rules(binding: Obj, lookup: RoleLookup) -> tuple[list[Obj], str | None]:
    """The rules a binding grants, or an error worded as the RBAC authorizer's."""
    ref = binding.get("roleRef") or {}
    kind, name = ref.get("kind", ""), ref.get("name", "")
    namespace = (binding.get("metadata") or {}).get("namespace") or ""
    if kind == "ClusterRole":
        rules = lookup("ClusterRole", "", name)
        missing = f'clusterrole.rbac.authorization.k8s.io "{name}" not found'
    elif kind == "Role" and namespace:
        rules = lookup("Role", namespace, name)
        missing = f'role.rbac.authorization.k8s.io "{name}" not found'
    else:
        return [], f"unsupported role reference kind: {kind!r}"
    return (rules, None) if rules is not None else ([], missing)


@dataclass(frozen=True)
class Policy:
    """A cluster's RBAC objects as plain dicts (for the pure evaluators below)."""

    cluster_role_bindings: Sequence[Obj] = ()
    role_bindings: Sequence[Obj] = ()
    cluster_roles: Sequence[Obj] = ()
    roles: Sequence[Obj] = ()

    def lookup(self, kind: str, namespace: str, name: str) -> list[Obj] | None:
        roles = self.cluster_roles if kind == "ClusterRole" else self.roles
        for role in roles:
            md = role.get("metadata") or {}
            if md.get("name") == name and (md.get("namespace") or "") == namespace:
                return list(role.get("rules") or [])
        return None

    def bindings_in_scope(self, namespace: str) -> list[Obj]:
        """ClusterRoleBindings, then the RoleBindings of ``namespace`` (as VisitRulesFor)."""
        found = list(self.cluster_role_bindings)
        if namespace:
            found += [
                b
                for b in self.role_bindings
                if (b.get("metadata") or {}).get("namespace") == namespace
            ]
        return found


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def authorize(attrs: Attributes, username: str, groups: Iterable[str], policy: Policy) -> Decision:
    """The RBAC authorizer: allow if a binding of the user grants a matching rule."""
    groups = tuple(groups)
    errors: list[str] = []
    for binding in policy.bindings_in_scope(attrs.namespace):
        subject = matching_subject(binding, username, groups)
        if subject is None:
            continue
        rules, error = role_rules(binding, policy.lookup)
        if error:
            errors.append(error)
        if any(rule_allows(rule, attrs) for rule in rules):
            return Decision(True, f"RBAC: allowed by {describe_binding(binding, subject)}")
    return Decision(False, deny_reason(errors))


def deny_reason(errors: list[str]) -> str:
    if not errors:
        return ""
    text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return f"RBAC: {text}"


# --- the answer to a denied request ---------------------------------------------------------


def forbidden_message(attrs: Attributes, username: str, reason: str = "") -> str:
    """kube-apiserver's 403 message (``forbiddenMessage`` wrapped by ``NewForbidden``)."""
    if not attrs.resource_request:
        text = f'User "{username}" cannot {attrs.verb} path "{attrs.path}"'
    else:
        where = (
            f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
        )
        text = (
            f'User "{username}" cannot {attrs.verb} resource "{attrs.combined_resource}" '
            f'in API group "{attrs.api_group}" {where}'
        )
    if reason:
        text = f"{text}: {reason}"
    resource = attrs.resource if attrs.resource_request else ""
    qualified = f"{resource}.{attrs.api_group}" if resource and attrs.api_group else resource
    if not qualified:
        return f"forbidden: {text}"
    if attrs.name:
        return f'{qualified} "{attrs.name}" is forbidden: {text}'
    return f"{qualified} is forbidden: {text}"


def forbidden_details(attrs: Attributes) -> dict[str, str]:
    """The ``details`` of the 403 Status: the qualified resource and the name."""
    details = {"name": attrs.name, "group": attrs.api_group, "kind": attrs.resource}
    if not attrs.resource_request:
        details.update(group="", kind="")
    return {key: value for key, value in details.items() if value}


def rules_for(
    username: str, groups: Iterable[str], namespace: str, policy: Policy
) -> tuple[list[Obj], list[str]]:
    """Every rule granted to the user in ``namespace`` (a SelfSubjectRulesReview), and errors."""
    groups = tuple(groups)
    rules: list[Obj] = []
    errors: list[str] = []
    for binding in policy.bindings_in_scope(namespace):
        if matching_subject(binding, username, groups) is None:
            continue
        granted, error = role_rules(binding, policy.lookup)
        rules += granted
        if error:
            errors.append(error)
    return rules, errors
