"""Who is calling: the participant id every A2A call is made as, in one of two modes.

``gateway.participant_identity`` chooses how the gateway learns it:

- ``header`` (the seed's model): the caller names itself in ``X-Participant-Id``. Nothing checks
  the claim, so anyone who can reach the gateway can act as any participant. Use it behind
  something that sets the header itself (an authenticating proxy, a mesh) or on a trusted
  network, never on an open port.
- ``tokenreview``: the caller sends ``Authorization: Bearer <token>`` and the gateway asks the
  Kubernetes API (TokenReview) whose token it is; the participant is that user, for a
  ServiceAccount ``system:serviceaccount:<namespace>:<name>``. ``X-Participant-Id`` is ignored.
  The gateway needs ``create`` on ``tokenreviews``; a verdict is kept for
  :data:`REVIEW_CACHE_SECONDS`, so a revoked token is refused at most that much later.

  Every TokenReview is work the API server does for a caller nobody knows yet, so it is
  rationed: public paths never read credentials (:class:`Authenticate`), and a client address
  whose tokens were refused ``auth_failures_per_minute`` times in a minute gets 429 for any
  token this gateway has not accepted before, with no TokenReview (:class:`TooManyFailures`).
  With ``token_audiences`` set, each review asks for those audiences, so only a token made for
  the gateway (``kubectl create token NAME --audience AUD``) passes; such a token is no good
  against the API server itself, so whoever sees it on the way cannot use it there.

Both are Starlette authentication backends: the caller becomes ``request.user``, which the
SDK's call context builder hands to the request handler as ``ServerCallContext.user``.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final, TypeVar

import aiohttp
from a2a.server.context import ServerCallContext
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    BaseUser,
    UnauthenticatedUser,
)
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tiny_harness.a2a_gateway.limits import TokenBuckets, address_key, refusal, retry_after
from tiny_harness.a2a_gateway.metrics import OUTCOME_KEY, note
from tiny_harness.core.reason_codes import ReasonCode
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.core.task import NAME_MAX

PARTICIPANT_HEADER: Final = "X-Participant-Id"
REVIEW_CACHE_SECONDS: Final = 30.0
_REVIEW_CACHE_SIZE: Final = 4096
V = TypeVar("V")


class Participant(BaseUser):
    """An identified caller. ``participant_id`` is the id as tasks list it."""

    def __init__(self, participant_id: str, mode: str) -> None:
        self.participant_id = participant_id
        self.mode = mode

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.participant_id


def participant_of(context: ServerCallContext) -> str | None:
    """The participant a call is made as, or None for an anonymous call."""
    if not context.user.is_authenticated:
        return None
    return context.user.user_name or None


def _valid_identity(value: str) -> bool:
    return 0 < len(value) <= NAME_MAX and value.isprintable() and value == value.strip()


class HeaderIdentity(AuthenticationBackend):
    """The caller is whoever ``X-Participant-Id`` says (self-asserted)."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        value = conn.headers.get(PARTICIPANT_HEADER)
        if value is None:
            return None
        if not _valid_identity(value):
            raise AuthenticationError(
                f"{PARTICIPANT_HEADER} must be 1 to {NAME_MAX} printable characters "
                "without surrounding spaces"
            )
        return AuthCredentials(["participant"]), Participant(value, "header")


class TooManyFailures(AuthenticationError):
    """Refused (429) without a TokenReview: too many tokens from this address were refused."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Unverified(AuthenticationError):
    """The API server gave no verdict; the token may be fine, so this is never cached."""


def token_hint(audiences: Sequence[str]) -> str:
    """How to make a token this gateway takes, for a ServiceAccount."""
    audience = f" --audience {audiences[0]}" if audiences else ""
    return f"for a ServiceAccount: kubectl create token NAME{audience}"


class TokenReviewIdentity(AuthenticationBackend):
    """The caller is the Kubernetes user whose bearer token the API server accepts, for one of
    ``audiences`` when any are given. ``failures`` counts refused tokens per client address."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        failures: TokenBuckets,
        audiences: Sequence[str] = (),
    ) -> None:
        self._reviews = client.AuthenticationV1Api(api)
        self._audiences = tuple(audiences)
        self._failures = failures
        # token digest -> (participant or refusal, expiry); bounded, oldest first out.
        self._cache: OrderedDict[str, tuple[str | AuthenticationError, float]] = OrderedDict()
        # Digests of tokens accepted before (only a valid token gets in, so no caller can fill
        # it): those are reviewed even from an address past its failure limit, so that one
        # client's bad tokens do not lock out the people who share its address (a NAT, the
        # ingress in front of the gateway).
        self._accepted: OrderedDict[str, None] = OrderedDict()

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        header = conn.headers.get("Authorization")
        if header is None:
            return None
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise AuthenticationError("the Authorization header must be 'Bearer <token>'")
        address = address_key(conn.client.host if conn.client else None)
        identity = await self._review(token, address)
        return AuthCredentials(["participant"]), Participant(identity, "tokenreview")

    async def _review(self, token: str, address: str) -> str:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        cached = self._cache.get(key)
        fresh = cached[0] if cached is not None and cached[1] > now else None
        if isinstance(fresh, str):
            return fresh  # accepted a moment ago: nothing to ask, nothing to count
        known = key in self._accepted
        if not known:
            # Counted as refused before the review, so that concurrent requests cannot all
            # pass the check before the first verdict; given back if the token is accepted.
            wait = self._failures.take(address)
            if wait:
                raise self._too_many(address, wait)
        verdict: str | AuthenticationError
        if fresh is not None:
            verdict = fresh
        else:
            verdict = await self._ask(token)
            if not isinstance(verdict, _Unverified):
                _remember(self._cache, key, (verdict, now + REVIEW_CACHE_SECONDS))
        if isinstance(verdict, AuthenticationError):
            if known and not isinstance(verdict, _Unverified):  # revoked, or expired
                self._accepted.pop(key, None)
                self._failures.take(address)
            raise verdict.with_traceback(None)  # a cached one would grow a traceback per raise
        if not known:
            self._failures.give_back(address)
        _remember(self._accepted, key, None)
        return verdict

    def _too_many(self, address: str, wait: float) -> TooManyFailures:
        seconds = retry_after(wait)
        return TooManyFailures(
            f"too many refused bearer tokens from {address}: after "
            f"{self._failures.per_minute} in a minute (gateway.auth_failures_per_minute) this "
            f"gateway checks no new token from there; retry in {seconds}s with a valid token "
            f"({token_hint(self._audiences)})",
            seconds,
        )

    def _audience_hint(self) -> str:
        wanted = ", ".join(self._audiences)
        return (
            f"this gateway takes only tokens made for it, with the audience {wanted} "
            f"(gateway.token_audiences); {token_hint(self._audiences)}"
        )

    async def _ask(self, token: str) -> str | AuthenticationError:
        body = client.V1TokenReview(
            spec=client.V1TokenReviewSpec(token=token, audiences=list(self._audiences) or None)
        )
        try:
            review = await self._reviews.create_token_review(body)
        except ApiException as exc:
            return _Unverified(
                f"the bearer token could not be verified (TokenReview failed: {exc.status} "
                f"{exc.reason}); try again"
            )
        except (aiohttp.ClientError, TimeoutError):
            return _Unverified(
                "the bearer token could not be verified (the gateway could not reach the "
                "Kubernetes API for a TokenReview); try again"
            )
        status = review.status
        if status is None or not status.authenticated or status.user is None:
            reason = (status.error if status is not None else None) or "not authenticated"
            refused = f"the bearer token was refused by Kubernetes: {reason}"
            if self._audiences:
                refused += f"; {self._audience_hint()}"
            return AuthenticationError(refused)
        # An authenticator that ignores audiences answers with none: the token is then one
        # for the API server itself, which is exactly what the audiences are there to refuse.
        if self._audiences and not set(status.audiences or ()) & set(self._audiences):
            return AuthenticationError(
                f"the bearer token is not meant for this gateway: {self._audience_hint()}"
            )
        username = str(status.user.username or "")
        if not _valid_identity(username):
            return AuthenticationError("the token's user name cannot be a participant id")
        return username


def _remember(table: OrderedDict[str, V], key: str, value: V) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > _REVIEW_CACHE_SIZE:
        table.popitem(last=False)


def identity_backend(settings: GatewaySettings, api: client.ApiClient) -> AuthenticationBackend:
    if settings.participant_identity == "tokenreview":
        return TokenReviewIdentity(
            api,
            failures=TokenBuckets(settings.auth_failures_per_minute),
            audiences=settings.token_audiences,
        )
    return HeaderIdentity()


def refuse_credentials(conn: HTTPConnection, exc: AuthenticationError) -> Response:
    """The answer to credentials that were sent but are not acceptable: 401, or 429 when they
    were not even checked (:class:`TooManyFailures`)."""
    state = conn.scope.setdefault("state", {})
    if isinstance(exc, TooManyFailures):
        note(state, **{OUTCOME_KEY: "rate_limited"})
        return refusal(
            429,
            "RESOURCE_EXHAUSTED",
            str(exc),
            ReasonCode.TOO_MANY_REFUSED_TOKENS,
            **{"Retry-After": str(exc.retry_after)},
        )
    note(state, **{OUTCOME_KEY: "unauthenticated"})
    return unauthenticated(str(exc))


class Authenticate:
    """Starlette's authentication middleware everywhere but on ``public_paths``, which never
    read credentials: a request there costs no TokenReview and is never refused for what its
    Authorization header says."""

    def __init__(
        self, app: ASGIApp, backend: AuthenticationBackend, public_paths: frozenset[str]
    ) -> None:
        self.app = app
        self.public_paths = public_paths
        self.authenticated = AuthenticationMiddleware(
            app, backend=backend, on_error=refuse_credentials
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] in self.public_paths:
            scope["auth"], scope["user"] = AuthCredentials(), UnauthenticatedUser()
            await self.app(scope, receive, send)
            return
        await self.authenticated(scope, receive, send)


def unauthenticated(message: str) -> Response:
    return refusal(
        401,
        "UNAUTHENTICATED",
        message,
        ReasonCode.UNAUTHENTICATED,
        **{"WWW-Authenticate": "Bearer"},
    )


def _how_to_identify(mode: str, audiences: Sequence[str]) -> str:
    if mode == "tokenreview":
        return (
            "this gateway needs 'Authorization: Bearer <token>' with a Kubernetes token "
            f"({token_hint(audiences)})"
        )
    return f"this gateway needs the {PARTICIPANT_HEADER} header naming you as a participant"


class RequireParticipant:
    """Refuse (401) an A2A request that names no participant; public paths are let through.
    ``audiences`` (token review's) go into the advice on how to make a token."""

    def __init__(
        self,
        app: ASGIApp,
        mode: str,
        public_paths: frozenset[str],
        audiences: Sequence[str] = (),
    ) -> None:
        self.app = app
        self.message = _how_to_identify(mode, audiences)
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if (
            scope["type"] == "http"
            and scope["path"] not in self.public_paths
            and (user is None or not user.is_authenticated)
        ):
            note(scope.setdefault("state", {}), **{OUTCOME_KEY: "unauthenticated"})
            await unauthenticated(self.message)(scope, receive, send)
            return
        await self.app(scope, receive, send)
