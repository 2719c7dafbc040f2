"""JSON text kept in memory (the watch caches, the plan memo): orjson, copied to its size.

orjson encodes several times faster than the standard library, but the bytes it returns sit in
a buffer of at least 4 KiB whatever their length (measured with tracemalloc on orjson 3.13.0:
4,098 bytes for a 241-byte text). Kept for every watched object and every deployment, that was
tens of MiB: ``dumps`` copies the text into a bytes object of its own size (a memcpy).
"""

from __future__ import annotations

from typing import Any

import orjson

loads = orjson.loads


def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort_keys else None)
    return bytes(memoryview(text))
