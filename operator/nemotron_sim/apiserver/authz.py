"""The RBAC authorizer over the live store, fast enough for every request of a benchmark.

Bindings are indexed by subject, and each user's grants (the bindings that name them, their
roles' rules resolved) are computed once and cached. Any change to a Role, ClusterRole,
RoleBinding or ClusterRoleBinding clears the index and the cache: the authorizer holds a store
subscription to those four resources and checks, on each call, whether an event arrived (an
``empty()`` test, no task). The decisions themselves are :mod:`.rbac`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from nemotron_sim.apiserver import rbac
from nemotron_sim.apiserver.rbac import Attributes, Decision, Obj
from nemotron_sim.apiserver.store import Store
from nemotron_sim.apiserver.tokens import SUPERUSERS, UserInfo
from nemotron_sim.kubeapi.resources import ResourceKey

_RBAC = "rbac.authorization.k8s.io"
ROLES = ResourceKey(_RBAC, "v1", "roles")
CLUSTER_ROLES = ResourceKey(_RBAC, "v1", "clusterroles")
ROLE_BINDINGS = ResourceKey(_RBAC, "v1", "rolebindings")
CLUSTER_ROLE_BINDINGS = ResourceKey(_RBAC, "v1", "clusterrolebindings")
RBAC_KEYS = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)

SubjectKey = tuple[str, ...]


def _subject_key(subject: Obj, binding_namespace: str) -> SubjectKey | None:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return ("User", rbac.service_account_username(namespace, name)) if namespace else None
    return (kind, name) if kind in ("User", "Group") else None


def _user_keys(user: UserInfo) -> list[SubjectKey]:
    return [("User", user.username), *(("Group", g) for g in user.groups)]


@dataclass
class _Grant:
    """One binding that names the user, with its role's rules resolved."""

    rules: list[Obj]
    source: str
    error: str | None


@dataclass
class _UserGrants:
    cluster: list[_Grant]
    by_namespace: dict[str, list[_Grant]]

    def in_scope(self, namespace: str) -> list[_Grant]:
        return self.cluster + self.by_namespace.get(namespace, []) if namespace else self.cluster


@dataclass
class _Index:
    """Bindings by subject; a ServiceAccount subject is keyed by its username."""

    cluster: dict[SubjectKey, list[tuple[Obj, Obj]]] = field(default_factory=dict)
    namespaced: dict[SubjectKey, list[tuple[Obj, Obj]]] = field(default_factory=dict)

    @classmethod
    def build(cls, store: Store) -> _Index:
        index = cls()
        for key, target in (
            (CLUSTER_ROLE_BINDINGS, index.cluster),
            (ROLE_BINDINGS, index.namespaced),
        ):
            for binding in store.scan(key):
                namespace = (binding.get("metadata") or {}).get("namespace") or ""
                for subject in binding.get("subjects") or []:
                    subject_key = _subject_key(subject, namespace)
                    if subject_key is not None:
                        target.setdefault(subject_key, []).append((binding, subject))
        return index


class RbacAuthorizer:
    """``authorize(user, attributes)`` and ``rules(user, namespace)`` against the store's RBAC."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._changes = store.subscribe(RBAC_KEYS, copy=False)
        self._index: _Index | None = None
        self._users: dict[tuple[str, tuple[str, ...]], _UserGrants] = {}

    def close(self) -> None:
        self._store.unsubscribe(self._changes)

    def authorize(self, user: UserInfo, attrs: Attributes) -> Decision:
        if SUPERUSERS in user.groups:
            return Decision(True)
        errors: list[str] = []
        for grant in self._grants(user).in_scope(attrs.namespace):
            if grant.error:
                errors.append(grant.error)
            for rule in grant.rules:
                if rbac.rule_allows(rule, attrs):
                    return Decision(True, f"RBAC: allowed by {grant.source}")
        return Decision(False, rbac.deny_reason(errors))

    def rules(self, user: UserInfo, namespace: str) -> tuple[list[Obj], list[str]]:
        """Every rule the user holds in ``namespace`` (cluster-wide ones included), and errors."""
        grants = self._grants(user).in_scope(namespace)
        rules = [rule for grant in grants for rule in grant.rules]
        return rules, [grant.error for grant in grants if grant.error]

    def _grants(self, user: UserInfo) -> _UserGrants:
        if not self._changes.empty():
            while not self._changes.empty():
                self._changes.get_nowait()
            self._index = None
            self._users.clear()
        cache_key = (user.username, user.groups)
        found = self._users.get(cache_key)
        if found is None:
            if self._index is None:
                self._index = _Index.build(self._store)
            found = self._users[cache_key] = self._resolve(self._index, user)
        return found

    def _resolve(self, index: _Index, user: UserInfo) -> _UserGrants:
        keys = _user_keys(user)
        cluster = [self._grant(b, s) for b, s in _unique(index.cluster, keys)]
        by_namespace: dict[str, list[_Grant]] = {}
        for binding, subject in _unique(index.namespaced, keys):
            namespace = (binding.get("metadata") or {}).get("namespace") or ""
            by_namespace.setdefault(namespace, []).append(self._grant(binding, subject))
        return _UserGrants(cluster, by_namespace)

    def _grant(self, binding: Obj, subject: Obj) -> _Grant:
        rules, error = rbac.role_rules(binding, self._lookup)
        return _Grant(rules, rbac.describe_binding(binding, subject), error)

    def _lookup(self, kind: str, namespace: str, name: str) -> list[Obj] | None:
        key = CLUSTER_ROLES if kind == "ClusterRole" else ROLES
        role = self._store.peek(key, namespace or None, name)
        return None if role is None else list(role.get("rules") or [])


def _unique(
    by_subject: dict[SubjectKey, list[tuple[Obj, Obj]]], keys: Iterable[SubjectKey]
) -> list[tuple[Obj, Obj]]:
    """Each binding once (with the first of its subjects that names the user)."""
    seen: dict[int, tuple[Obj, Obj]] = {}
    for key in keys:
        for binding, subject in by_subject.get(key, []):
            seen.setdefault(id(binding), (binding, subject))
    return sorted(seen.values(), key=lambda pair: _binding_order(pair[0]))


def _binding_order(binding: Obj) -> tuple[str, str]:
    md = binding.get("metadata") or {}
    return (md.get("namespace") or "", md.get("name") or "")
