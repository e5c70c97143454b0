"""The API group, version and names of the ``HarnessTask`` resource, and our label and
annotation prefixes.

The group is the project's own, consistent with the A2A extension namespace
``madarauchiha-314.github.io/tiny-harness``.
"""

from typing import Final

GROUP: Final = "tiny-harness.madarauchiha-314.github.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "HarnessTask"
PLURAL: Final = "harnesstasks"
SINGULAR: Final = "harnesstask"
SHORT_NAME: Final = "ht"

#: Prefix of our labels, annotations and finalizers.
PREFIX: Final = GROUP
PARENT_LABEL: Final = f"{PREFIX}/parent"
FINALIZER: Final = f"{PREFIX}/finalizer"
