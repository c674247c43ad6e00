# syntax=docker/dockerfile:1
#
# kube-cache-proxy image. Two stages: `build` compiles TypeScript to dist/ with the dev
# dependencies and bundles the CLI (dist/kube-cache-proxy.js and its chunks, scripts/bundle.ts);
# the runtime stage holds only dist/, package.json and the production
# dependencies, and runs as a non-root numeric UID (so the kubelet can verify runAsNonRoot).
#
# There is no Docker engine in CI: scripts/image-build.sh performs the SAME steps in a clean
# folder and starts the result, and test/unit/repo/image-steps.test.ts fails when the `npm`
# commands of the two files drift apart. Change both together.

ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts/bundle.ts ./scripts/bundle.ts
# The context has no .git: the bundle records the revision it is given (`--version` prints it).
ARG REVISION=unknown
ENV KCP_REVISION=${REVISION}
RUN npm run build

FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
ARG VERSION=0.0.0-dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="kube-cache-proxy" \
      org.opencontainers.image.description="A local caching proxy for the Kubernetes apiserver: one upstream watch per resource, LIST/GET/WATCH served from memory with apiserver resourceVersion semantics." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"
# npm, npx, corepack and yarn are not needed at run time: fewer binaries, fewer CVEs.
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx \
      /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*
WORKDIR /app
ENV NODE_ENV=production
# package.json is needed at run time: "type": "module" makes dist/**/*.js ES modules. node_modules
# too: the bundle requires undici and the rarely used client-node credential modules from it.
COPY --from=prod-deps /app/package.json ./package.json
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# 65532 is the conventional "nonroot" UID (distroless); nothing in /app is writable by it, which
# is what readOnlyRootFilesystem expects.
USER 65532:65532
# Main listener (Kubernetes API) and ops listener (/metrics, /livez, /readyz, /debug/cache).
EXPOSE 8001 8081
# glibc malloc setting of the shebang of src/cli.ts (test/unit/repo/image-steps.test.ts keeps them
# equal): a fixed mmap threshold of 128 KiB, so malloc keeps blocks of 128 KiB or more (the cache's
# 1 MiB slabs, a LIST's 256 KiB batches) in mmaps of their own, returned when freed, instead of
# raising the threshold after the first big free and carving them from the brk heap, which then
# stays at its high-water mark (docs/benchmarks.md, "Protobuf answers"). An ENV, so it holds
# whatever command a pod runs; a deployment may override it.
ENV MALLOC_MMAP_THRESHOLD_=131072
# V8 flags of the shebang of src/cli.ts (test/unit/repo/image-steps.test.ts keeps them equal):
# young-generation semi-spaces of 2 MiB instead of 16 MiB, which the cache's cold sync grows to
# and keeps (docs/benchmarks.md, memory). On the command line, not in NODE_OPTIONS, so a
# NODE_OPTIONS of the deployment (deploy/base sets the heap size) does not drop it.
ENTRYPOINT ["node", "--max-semi-space-size=2", "dist/kube-cache-proxy.js"]
