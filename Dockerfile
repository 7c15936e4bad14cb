# syntax=docker/dockerfile:1
# The ingestion API on Node 20: `docker build -t ingest-api .`
# Not built by CI (Docker is not installed on the project's machines); see docs/operations.md.

# Production dependencies only; better-sqlite3 compiles here, with the toolchain.
FROM node:20-bookworm-slim AS deps
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

# The TypeScript build needs the dev dependencies too.
FROM deps AS build
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY gen gen
COPY openapi openapi
COPY src src
COPY tracker tracker
COPY dashboard dashboard
# dist/ (the server), dist/tracker/script.js and dist/dashboard/ (the browser files it serves).
RUN npm run build

# Runtime: no compiler, no dev dependencies, not root.
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    STORE_URL=sqlite:/data/ingest.sqlite
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/dist dist
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT||8080}/readyz`).then((r)=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM from `docker stop` reaches Node directly (exec form): in-flight requests finish,
# queued writes are written, then the store closes.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]
