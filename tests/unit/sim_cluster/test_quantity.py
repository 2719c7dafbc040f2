from __future__ import annotations

from fractions import Fraction

import pytest

from nemotron_sim.kubelet.quantity import QuantityError, parse_quantity, sum_resources


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
        ("16Gi", Fraction(16 * 2**30)),
        ("1.5G", Fraction(1_500_000_000)),
        (8, Fraction(8)),
        ("1e3", Fraction(1000)),
    ],
)
def test_parse(text: object, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["lots", "5Zi", "", True])
def test_reject(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_sum() -> None:
    assert sum_resources({"cpu": "1"}, {"cpu": "500m", "memory": "1Ki"}) == {
        "cpu": Fraction(3, 2),
        "memory": Fraction(1024),
    }
