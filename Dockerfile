# syntax=docker/dockerfile:1
# agentgate's container image (docs/deploy.md, "The container image"):
#
#   docker build -t agentgate:latest .
#   docker run -d --name agentgate -p 127.0.0.1:18790:18790 -v agentgate-state:/var/lib/agentgate \
#     -e AGENTGATE_HOOK_TOKEN="$(openssl rand -hex 32)" -e AGENTGATE_GATEWAY_TOKEN="$(openssl rand -hex 32)" \
#     agentgate:latest
#
# Node.js 24, the LTS line supported longest of those package.json's engines allows. The two
# bases are arguments so that a machine without a registry can build from bases of its own
# (.ci/image.sh does): BUILD_IMAGE brings node, npm, python3, make and g++ (better-sqlite3 is
# compiled when no prebuilt binary can be downloaded); NODE_IMAGE only needs node on PATH and
# groupadd/useradd. Both must be the same Node major: the compiled better-sqlite3 is for one ABI.
ARG BUILD_IMAGE=node:24-bookworm
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
# The dependencies first, from the committed lockfile: this layer is reused while it is unchanged.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
# The gateway's own user and its one writable folder, the state volume; root owns the rest.
RUN groupadd --gid 10001 agentgate \
  && useradd --uid 10001 --gid agentgate --home-dir /var/lib/agentgate --no-create-home \
    --shell /usr/sbin/nologin agentgate \
  && install -d -o agentgate -g agentgate -m 0700 /var/lib/agentgate
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# The default config: tokens from the environment, the database in the volume. A folder mounted
# at /etc/agentgate replaces it (compose.yaml and the Kubernetes base mount theirs).
COPY deploy/image/agentgate.json5 /etc/agentgate/agentgate.json5
ENV NODE_ENV=production \
    AGENTGATE_CONFIG=/etc/agentgate/agentgate.json5
USER 10001:10001
VOLUME ["/var/lib/agentgate"]
EXPOSE 18790
# node itself, not curl (the slim base has none); the port is the config's.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:18790/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1: `agentgate run` handles SIGTERM and SIGINT itself and exits 0 within 10 s
# (docs/deploy.md, "Signals"). No entrypoint script: the node base's would only exec this.
STOPSIGNAL SIGTERM
ENTRYPOINT []
CMD ["node", "/app/dist/cli/main.js", "run"]
