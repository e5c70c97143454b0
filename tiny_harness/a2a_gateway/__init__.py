"""The A2A gateway: a2a-sdk's server over ``HarnessTask`` resources, holding no state.

Every A2A call becomes reads, writes and watches of the custom resources (see
``docs/design/gateway.md``): the SDK's routes and SSE streaming in front, a request handler
that decides who may do what, and Kubernetes behind the SDK's versioned task store and task
event stream. Any number of replicas behind one Service behave as one.

``tiny-harness gateway`` runs :func:`serve_gateway`; :func:`build_app` is the ASGI app itself.
"""

from tiny_harness.a2a_gateway.app import build_app, serve_gateway

__all__ = ["build_app", "serve_gateway"]
