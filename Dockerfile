# syntax=docker/dockerfile:1
# The tiny-harness image: one image for the operator and the gateway, entrypoint `tiny-harness`
# (the chart runs `tiny-harness operator ...` and `tiny-harness gateway ...`).
#
# With Docker, and kind (see docs/design/install.md):
#   docker build -t tiny-harness:dev .
#   kind load docker-image tiny-harness:dev --name tiny-harness
#   helm install ... --set image.repository=tiny-harness --set image.tag=dev
#
# Without a Docker engine, hack/image/build.sh builds this same file with buildah into an OCI
# archive that containerd imports (the local node, `make cluster`). It passes the build args
# below: PYTHON_IMAGE, a base built from Debian bookworm's packages (its Python is 3.11, as the
# default's), and WEB_ASSETS=prebuilt with the assets `make web` built, given as the build
# context `webui` (--build-context webui=tiny_harness/a2a_gateway/webui), since Debian has no
# Node.js recent enough for vite. Nothing else differs.
ARG NODE_IMAGE=node:20-slim
ARG PYTHON_IMAGE=python:3.11-slim
# build: the web UI is built here from web/; prebuilt: taken from the `webui` build context.
ARG WEB_ASSETS=build

# Web: the web UI's TypeScript built into static assets (npm ci from the committed lock, then
# vite), which vite writes into the package (tiny_harness/a2a_gateway/webui/) for the wheel.
FROM ${NODE_IMAGE} AS web-build
WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY web/ ./
RUN npm run build

# Or the assets as `make web` built them, for builders without a Node.js base.
FROM scratch AS web-prebuilt
COPY --from=webui . /src/tiny_harness/a2a_gateway/webui/

FROM web-${WEB_ASSETS} AS web

# Builder: build the wheel from the source and install it, with its dependencies, into a
# virtual environment that the runtime stage copies whole.
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# The dependencies first, in a layer of their own: exactly what requirements.lock pins (the
# runtime lock, `make lock`), each file checked against its hash, nothing resolved here. The
# layer is keyed by the lock alone, so it is built again when a pin changes, and a change to
# the source (or pyproject.toml, or the README) rebuilds only the layers after it.
COPY requirements.lock ./
RUN python -m venv /opt/tiny-harness \
 && /opt/tiny-harness/bin/pip install --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY tiny_harness ./tiny_harness
COPY --from=web /src/tiny_harness/a2a_gateway/webui ./tiny_harness/a2a_gateway/webui
# The wheel without its dependencies (the lock gave them); pip check fails the build if the
# lock lacks one that pyproject.toml names.
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/tiny-harness/bin/pip install --no-deps /wheels/*.whl \
 && /opt/tiny-harness/bin/pip check \
 && /opt/tiny-harness/bin/tiny-harness --help >/dev/null

# Runtime: the same base (so the venv's interpreter links stay valid), no build tools, no
# source tree, a fixed non-root uid that the chart's securityContext also names (10001). The
# root filesystem can be read-only: bytecode was compiled at install time, and /tmp is the only
# writable path the chart mounts.
FROM ${PYTHON_IMAGE} AS runtime
RUN groupadd --system --gid 10001 tiny-harness \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin tiny-harness
COPY --from=builder /opt/tiny-harness /opt/tiny-harness
ENV PATH=/opt/tiny-harness/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
# The gateway's port (A2A, /healthz, /metrics); the operator's liveness and metrics ports are
# 8080 and 9090 in the chart.
EXPOSE 8080 9090
ENTRYPOINT ["tiny-harness"]
CMD ["--help"]
