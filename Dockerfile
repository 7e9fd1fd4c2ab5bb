# orpycamcp-exporter container image.
#
#   docker build -t orpycamcp-exporter .
#   docker run --rm -p 9874:9874 -e DATABASE_URL=postgresql://... orpycamcp-exporter
#
# Every third-party package is pinned with its sha256 in requirements/ (made
# by scripts/lock) and installed with hash checking, whatever index serves it.
# Air-gapped: point BASE_IMAGE at a mirror (any Debian-like image with python3
# >= 3.11 and its venv module), and fetch the locked wheels on a machine that
# reaches the package index first; the build then installs from them only:
#
#   scripts/wheelhouse      # pip download into wheels/
#   docker build --build-arg BASE_IMAGE=mirror.example/python:3.11-slim-bookworm .
#
# Two stages on the same base: the builder installs the locked runtime
# dependencies and the project into a virtualenv and writes its SBOM
# (/opt/venv/sbom.cdx.json, CycloneDX), the final stage copies only that
# virtualenv. Every runtime dependency ships wheels for CPython 3.11 on
# linux/amd64 and linux/arm64, so no compiler is needed in either stage and
# none reaches the final image.

ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

# Whatever python3 the base has, wherever it keeps it: the virtualenv links to
# it, and the final stage, on the same base, has it at the same place.
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /src
# The locks first (the dependencies' layer is rebuilt only when they change),
# and the wheelhouse, empty unless scripts/wheelhouse filled it.
COPY requirements/runtime.txt requirements/build.txt requirements/
COPY wheels/ wheels/
# From wheels/ when it holds wheels, else from the package index; either way
# each file is checked against its hash in the lock. The build backend and the
# SBOM writer get a virtualenv of their own, left behind in this stage.
RUN if [ -n "$(find wheels -name '*.whl' -print -quit)" ]; then set -- --no-index --find-links=wheels; fi \
    && python3 -m venv /opt/build-tools \
    && /opt/build-tools/bin/pip install --no-cache-dir --require-hashes "$@" -r requirements/build.txt \
    && pip install --no-cache-dir --require-hashes "$@" -r requirements/runtime.txt

# Only what the package build reads (.dockerignore keeps everything else out).
COPY pyproject.toml README.md ./
COPY registry/ registry/
COPY exporter/ exporter/
# The project itself, built from this source with the locked backend and
# installed without dependencies (they are all in). The installer is not
# needed at run time: out of the virtualenv it goes, before the SBOM records
# what stays.
RUN /opt/build-tools/bin/pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /tmp/dist . \
    && pip install --no-cache-dir --no-index --no-deps /tmp/dist/*.whl \
    && pip uninstall --yes pip setuptools \
    && /opt/build-tools/bin/cyclonedx-py environment --output-reproducible \
        --output-file /opt/venv/sbom.cdx.json /opt/venv/bin/python


FROM ${BASE_IMAGE}

ARG BASE_IMAGE
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="orpycamcp-exporter" \
      org.opencontainers.image.description="Prometheus exporter for the backlogs that pile up in silence on the orpycamcp platform" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/orpycamcp/orpycamcp-exporter" \
      org.opencontainers.image.documentation="https://github.com/orpycamcp/orpycamcp-exporter/blob/main/README.md" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1

COPY --from=builder /opt/venv /opt/venv

# Any unprivileged numeric user works: the exporter writes no file.
USER 65532:65532

EXPOSE 9874

# Probes /-/healthy (which never touches the database) where the exporter
# really listens: the address, TLS and basic auth come from the serving
# process's own flags, environment and web configuration.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["orpycamcp-exporter", "healthcheck"]

ENTRYPOINT ["orpycamcp-exporter"]
CMD ["serve"]
