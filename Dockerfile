# syntax=docker/dockerfile:1
# orpycamcp-exporter container image.
#
#   docker build -t orpycamcp-exporter .
#   docker run --rm -p 9874:9874 -e DATABASE_URL=postgresql://... orpycamcp-exporter
#
# Two stages on the same official slim Python base: the builder installs the
# project and its runtime dependencies (from pyproject.toml) into a virtualenv,
# the final stage copies only that virtualenv. Every runtime dependency ships
# wheels for CPython 3.11 on linux/amd64 and linux/arm64, so no compiler is
# needed in either stage and none reaches the final image.

FROM python:3.11-slim-bookworm AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /src
# Only what the package build reads (.dockerignore keeps everything else out).
COPY pyproject.toml README.md ./
COPY registry/ registry/
COPY exporter/ exporter/
# `.` is this project: its dependencies and their bounds come from pyproject.toml.
RUN pip install --no-cache-dir .


FROM python:3.11-slim-bookworm

ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="orpycamcp-exporter" \
      org.opencontainers.image.description="Prometheus exporter for the backlogs that pile up in silence on the orpycamcp platform" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/orpycamcp/orpycamcp-exporter" \
      org.opencontainers.image.documentation="https://github.com/orpycamcp/orpycamcp-exporter/blob/main/README.md" \
      org.opencontainers.image.base.name="docker.io/library/python:3.11-slim-bookworm"

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1

COPY --from=builder /opt/venv /opt/venv

# Any unprivileged numeric user works: the exporter writes no file.
USER 65532:65532

EXPOSE 9874

# /-/healthy never touches the database. No proxy: the exporter answers 404 to
# anything that came through one.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:9874/-/healthy', timeout=4)"]

ENTRYPOINT ["orpycamcp-exporter"]
CMD ["serve"]
