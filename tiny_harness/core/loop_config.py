"""The core loop's settings, one typed object validated once when the loop is built.

Apart from the loop (:mod:`tiny_harness.core.loop`) because its steps read it too (the model
step's compaction, :mod:`tiny_harness.core.model_steps`), and they are imported by the loop.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LoopConfig(BaseModel):
    """The loop's settings, validated once when the loop is built."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_model_calls: int = Field(
        default=32, ge=1, description="Model calls one turn may make before it parks."
    )
    reserve_tokens: int = Field(
        default=8192, ge=0, description="Tokens of the window kept free for the model's answer."
    )
    keep_fraction: float = Field(
        default=0.5, gt=0, lt=1, description="Share of the history budget the kept tail may use."
    )
    summary_max_tokens: int = Field(
        default=2048, ge=1, description="The longest summary a compaction asks for."
    )
