# syntax=docker/dockerfile:1
# decigraph: the CSTP JSON-RPC service. See docker-compose.yml for it plus a ChromaDB server.
#
#   docker build -t decigraph .
#   docker run -e CSTP_AUTH_TOKENS=agent:token -p 127.0.0.1:8100:8100 -v decigraph-data:/data decigraph
#
# Without DECIGRAPH_CHROMA_URL the vectors live in an embedded ChromaDB under /data/chroma.

# -- the explorer's JavaScript (d3), installed exactly from service/ui/package-lock.json -------
FROM node:22-slim AS ui
WORKDIR /src
COPY service/ui/package.json service/ui/package-lock.json service/ui/
RUN npm ci --prefix service/ui --ignore-scripts --no-audit --no-fund

# -- Python dependencies and the package, in a virtual environment ----------------------------
FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
# torch==2.13.0+cpu (constraints.txt) is published on PyTorch's CPU index, not on PyPI; without
# the pin pip would pull the CUDA build (several GB). Override the index with
# --build-arg TORCH_CPU_INDEX=<mirror>.
ARG TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu
RUN python -m venv /opt/venv && /opt/venv/bin/pip install "pip>=24"
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# Dependencies first, from pyproject.toml alone, so a source change does not reinstall torch.
COPY pyproject.toml constraints.txt ./
# The `otel` extra too, so `DECIGRAPH_TRACING=otlp` works in the image (README "Tracing").
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['otel']))" \
        > requirements.txt \
    && pip install --extra-index-url "$TORCH_CPU_INDEX" -c constraints.txt -r requirements.txt
# Then the package itself, non-editable (README.md is its long description).
COPY README.md ./
COPY graph/ graph/
COPY retrieval/ retrieval/
COPY service/ service/
RUN pip install --no-deps . \
    && pip check \
    && python -c "import torch; assert torch.__version__.endswith('+cpu'), torch.__version__"

# -- runtime -----------------------------------------------------------------------------------
FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DECIGRAPH_DATA_DIR=/data \
    DECIGRAPH_PORT=8100
RUN groupadd --system --gid 10001 decigraph \
    && useradd --system --uid 10001 --gid decigraph --create-home --home-dir /home/decigraph decigraph \
    && mkdir /data \
    && chown decigraph:decigraph /data
COPY --from=build /opt/venv /opt/venv
# The explorer serves service/ui/ next to the installed package (service/ui_routes.py UI_DIR):
# its page, script and style from the source tree (whatever the wheel's package data holds),
# d3 from the node stage.
ARG SITE=/opt/venv/lib/python3.11/site-packages
COPY service/ui/ ${SITE}/service/ui/
COPY --from=ui /src/service/ui/node_modules/d3/dist ${SITE}/service/ui/node_modules/d3/dist
WORKDIR /home/decigraph
USER decigraph
VOLUME ["/data"]
EXPOSE 8100
HEALTHCHECK --interval=15s --timeout=10s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.build_opener(urllib.request.ProxyHandler({})).open(\"http://127.0.0.1:%s/health\" % os.environ.get(\"DECIGRAPH_PORT\", \"8100\"), timeout=5)"]
CMD ["decigraph", "serve", "--host", "0.0.0.0"]
