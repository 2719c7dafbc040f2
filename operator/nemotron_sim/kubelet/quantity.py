"""Kubernetes resource quantities ("500m", "16Gi", "8") as exact fractions."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

# Suffixes as in k8s.io/apimachinery/pkg/api/resource (binary SI, decimal SI, milli).
_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: Any) -> Fraction:
    """Parse a quantity; ints and floats are taken as plain numbers."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return Fraction(value)
    text = str(value)
    match = _QUANTITY.match(text.strip())
    if match is None or match.group(2) not in _SUFFIXES:
        raise QuantityError(f"not a quantity: {text!r}")
    return Fraction(match.group(1)) * _SUFFIXES[match.group(2)]


def sum_resources(*resource_maps: dict[str, Any]) -> dict[str, Fraction]:
    total: dict[str, Fraction] = {}
    for resources in resource_maps:
        for name, amount in resources.items():
            total[name] = total.get(name, Fraction(0)) + parse_quantity(amount)
    return total
