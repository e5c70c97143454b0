"""``kubectl_complete-harness``: what kubectl runs to complete ``kubectl harness ...``.

kubectl 1.26 and later completes a plugin ``kubectl-NAME`` by running the program
``kubectl_complete-NAME`` from PATH with the words typed after ``kubectl NAME`` and the word
under the cursor, and reads its candidates (:mod:`tiny_harness.cli.completion`). The scripts of
``kubectl harness completion bash|zsh`` ask it too. It loads the parser alone, not the plugin,
so it answers quickly.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from tiny_harness.cli.completion import answer
from tiny_harness.cli.kubectl_parser import build_parser


def main(argv: Sequence[str] | None = None) -> int:
    sys.stdout.write(answer(build_parser(), sys.argv[1:] if argv is None else argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
