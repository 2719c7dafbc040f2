"""Identity and RBAC on the simulated API server, through kubectl v1.37 and the Python client."""

from __future__ import annotations

from tests.integration.apiserver.conftest import ApiHandle


def test_kubectl_create_token_needs_the_service_account_and_a_real_lifetime(
    api: ApiHandle,
) -> None:
    missing = api.kubectl("create", "token", "op", "-n", "default", check=False)
    assert 'serviceaccounts "op" not found' in missing.stderr
    api.kubectl("create", "serviceaccount", "op")
    token = api.kubectl("create", "token", "op").stdout.strip()
    user = api.store(lambda _: api.thread._require().tokens.authenticate(token))
    assert user is not None
    assert user.username == "system:serviceaccount:default:op"
    short = api.kubectl("create", "token", "op", "--duration", "1m", check=False)
    assert (
        "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 "
        in (short.stderr)
    )
