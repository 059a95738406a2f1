# sluice-server's image: production dependencies only, on distroless Node, running as non-root (65532).
# Build it after `npm run build` (the image takes the compiled dist/): `docker build -t sluice-server .`
#
# Configured by the environment alone (docs/deploy.md):
#   SLUICE_CONFIG=/etc/sluice/rules.yaml  REDIS_URL=redis://redis:6379      sluice's own settings
#   RUNTIME_ROOT=/data RUNTIME_SUBDIRECTORY=ratelimit REDIS_URL=redis:6379  envoy ratelimit's (envoy mode)
# BUILD_BASE and BASE name the images to build on; any Node 20+ image with npm, and any Node 20+
# runtime with node at /nodejs/bin/node, will do (CI builds with a base assembled on the machine).
ARG BUILD_BASE=docker.io/library/node:20-bookworm-slim
ARG BASE=gcr.io/distroless/nodejs20-debian12:nonroot

FROM ${BUILD_BASE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/sluice/package.json packages/sluice/
COPY packages/server/package.json packages/server/
# Scripts stay off: the root's `prepare` builds with dev tools the image does not carry.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund
COPY packages/sluice/dist packages/sluice/dist
COPY packages/server/dist packages/server/dist
COPY packages/server/dashboard packages/server/dashboard
COPY packages/server/proto packages/server/proto
COPY deploy/image/probe.mjs probe.mjs

FROM ${BASE}
WORKDIR /app
COPY --from=build /app /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 GRPC_PORT=8081
USER 65532:65532
EXPOSE 8080 8081
# The probe asks GET /healthcheck and grpc.health.v1.Health/Check on the ports above.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["/nodejs/bin/node", "/app/probe.mjs"]
ENTRYPOINT ["/nodejs/bin/node", "/app/packages/server/dist/cli/main.js"]
CMD ["serve"]
