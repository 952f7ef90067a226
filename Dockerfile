# syntax=docker/dockerfile:1
# perfgate service image: the HTTP API, dashboard and `perfgate db` commands. No torch:
# the service never measures anything, it stores and compares.

FROM python:3.12-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY service ./service
COPY migrations ./migrations
COPY examples/benchmarks ./examples/benchmarks
RUN python -m venv /opt/perfgate \
 && /opt/perfgate/bin/pip install ".[server]"

FROM python:3.12-slim-bookworm
ENV PATH=/opt/perfgate/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/perfgate /opt/perfgate
RUN useradd --system --uid 10001 --home-dir /home/perfgate --create-home \
      --shell /usr/sbin/nologin perfgate
USER perfgate
WORKDIR /home/perfgate
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=5s --start-period=15s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=3)"]
CMD ["perfgate", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
