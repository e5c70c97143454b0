"""Label values for object names.

A label value is at most 63 characters, while an object name may be 253: a longer name is
replaced by a stable hash, and readers filter on the full name kept in the object itself.
"""

import hashlib

_MAX = 63


def label_value(name: str) -> str:
    if len(name) <= _MAX:
        return name
    return "h-" + hashlib.sha256(name.encode()).hexdigest()[: _MAX - 2]
