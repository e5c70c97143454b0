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

Both are Starlette authentication backends: the caller becomes ``request.user``, which the
SDK's call context builder hands to the request handler as ``ServerCallContext.user``.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from typing import Final

from a2a.server.context import ServerCallContext
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    BaseUser,
)
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tiny_harness.a2a_gateway.metrics import OUTCOME_KEY, note
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.core.task import NAME_MAX

PARTICIPANT_HEADER: Final = "X-Participant-Id"
REVIEW_CACHE_SECONDS: Final = 30.0
_REVIEW_CACHE_SIZE: Final = 4096


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


class TokenReviewIdentity(AuthenticationBackend):
    """The caller is the Kubernetes user whose bearer token the API server accepts."""

    def __init__(self, api: client.ApiClient, audiences: tuple[str, ...] = ()) -> None:
        self._reviews = client.AuthenticationV1Api(api)
        self._audiences = list(audiences)
        # token digest -> (participant or refusal, expiry); bounded, oldest first out.
        self._cache: OrderedDict[str, tuple[str | AuthenticationError, float]] = OrderedDict()

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        header = conn.headers.get("Authorization")
        if header is None:
            return None
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise AuthenticationError("the Authorization header must be 'Bearer <token>'")
        identity = await self._review(token)
        return AuthCredentials(["participant"]), Participant(identity, "tokenreview")

    async def _review(self, token: str) -> str:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        cached = self._cache.get(key)
        if cached is not None and cached[1] > now:
            verdict = cached[0]
        else:
            verdict = await self._ask(token)
            self._cache[key] = (verdict, now + REVIEW_CACHE_SECONDS)
            self._cache.move_to_end(key)
            while len(self._cache) > _REVIEW_CACHE_SIZE:
                self._cache.popitem(last=False)
        if isinstance(verdict, AuthenticationError):
            raise verdict
        return verdict

    async def _ask(self, token: str) -> str | AuthenticationError:
        body = client.V1TokenReview(
            spec=client.V1TokenReviewSpec(token=token, audiences=self._audiences or None)
        )
        try:
            review = await self._reviews.create_token_review(body)
        except ApiException as exc:
            # Not cached as a refusal: the token may be fine and the API briefly unavailable.
            raise AuthenticationError(
                f"the bearer token could not be verified (TokenReview failed: {exc.status} "
                f"{exc.reason}); try again"
            ) from None
        status = review.status
        if status is None or not status.authenticated or status.user is None:
            reason = (status.error if status is not None else None) or "not authenticated"
            return AuthenticationError(f"the bearer token was refused by Kubernetes: {reason}")
        username = str(status.user.username or "")
        if not _valid_identity(username):
            return AuthenticationError("the token's user name cannot be a participant id")
        return username


def identity_backend(settings: GatewaySettings, api: client.ApiClient) -> AuthenticationBackend:
    if settings.participant_identity == "tokenreview":
        return TokenReviewIdentity(api)
    return HeaderIdentity()


def refuse_credentials(conn: HTTPConnection, exc: AuthenticationError) -> Response:
    """The 401 answer to credentials that were sent but are not acceptable."""
    note(conn.scope.setdefault("state", {}), **{OUTCOME_KEY: "unauthenticated"})
    return unauthenticated(str(exc))


def unauthenticated(message: str) -> Response:
    return JSONResponse(
        {"error": {"code": 401, "status": "UNAUTHENTICATED", "message": message}},
        status_code=401,
        headers={"WWW-Authenticate": "Bearer"},
    )


def _how_to_identify(mode: str) -> str:
    if mode == "tokenreview":
        return (
            "this gateway needs 'Authorization: Bearer <token>' with a Kubernetes token "
            "(for a ServiceAccount: kubectl create token NAME)"
        )
    return f"this gateway needs the {PARTICIPANT_HEADER} header naming you as a participant"


class RequireParticipant:
    """Refuse (401) an A2A request that names no participant; public paths are let through."""

    def __init__(self, app: ASGIApp, mode: str, public_paths: frozenset[str]) -> None:
        self.app = app
        self.message = _how_to_identify(mode)
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
