"""Test fixtures that are real parts, shipped with the package so every test suite (and the
benches) can use them: :mod:`tiny_harness.testing.model_server` is a local scripted server that
speaks the OpenAI and Anthropic wire formats to the real SDKs (its script,
:mod:`~tiny_harness.testing.model_script`; its wire formats,
:mod:`~tiny_harness.testing.model_wire`); :mod:`~tiny_harness.testing.listener`
records every connection and header that reaches it (where a Secret must never arrive).

Nothing is imported here eagerly, so ``python -m tiny_harness.testing.model_server`` runs the
module once, as ``__main__``, and nothing else pays for aiohttp.
"""
