# runledger's image: the built server, production dependencies only, run by
# Node itself as the non-root user `node`, with tini in front of it.
#
#   docker build -t runledger .
#   docker run -d -p 4000:4000 -v runledger-data:/data -e API_TOKEN=... \
#     -e OLLAMA_HOST=http://ollama:11434 runledger
#   docker run --rm -e DATABASE_URL=postgres://... runledger runledger migrate
#
# The base is an argument (any Debian-based image with Node 22 and npm, and a
# user `node` or useradd to make one); docs/deployment.md has the rest.
ARG BASE=node:22-bookworm-slim

# ---------------------------------------------------------------------------
# Production dependencies. better-sqlite3 is compiled here, against the base's
# Node, when no prebuilt binary for it can be downloaded: Python, make and a
# C++ compiler are in this stage only. Of its build, only the binary it loads
# (build/Release/better_sqlite3.node) is kept, not SQLite's sources and objects.
FROM ${BASE} AS deps
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# The lockfile cut to what runledger's own dependencies reach (dependencies,
# optional ones, required peers), without the workspaces (the SDK packages and
# the examples) and development dependencies: npm 10 would otherwise also
# install what only a workspace uses (React for the examples).
RUN node -e ' \
      const fs = require("fs"); \
      const pkg = JSON.parse(fs.readFileSync("package.json", "utf8")); \
      const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8")); \
      const all = lock.packages; \
      const keep = { "": all[""] }; \
      const queue = [""]; \
      while (queue.length > 0) { \
        const from = queue.shift(); \
        const entry = all[from]; \
        const meta = entry.peerDependenciesMeta || {}; \
        const peers = Object.keys(entry.peerDependencies || {}).filter((name) => !(meta[name] && meta[name].optional)); \
        for (const name of [...Object.keys({ ...entry.dependencies, ...entry.optionalDependencies }), ...peers]) { \
          for (let base = from; ; base = base.slice(0, Math.max(0, base.lastIndexOf("/node_modules/")))) { \
            const key = (base ? base + "/" : "") + "node_modules/" + name; \
            if (all[key]) { if (!keep[key]) { keep[key] = all[key]; queue.push(key); } break; } \
            if (!base) break; \
          } \
        } \
      } \
      for (const manifest of [pkg, keep[""]]) { delete manifest.workspaces; delete manifest.devDependencies; } \
      lock.packages = keep; \
      fs.writeFileSync("package.json", JSON.stringify(pkg, null, 2)); \
      fs.writeFileSync("package-lock.json", JSON.stringify(lock, null, 2)); \
      console.log("package-lock.json: " + (Object.keys(keep).length - 1) + " of " + (Object.keys(all).length - 1) + " entries kept"); \
    '
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force \
 && cd node_modules/better-sqlite3 \
 && mv build/Release/better_sqlite3.node /tmp/ \
 && rm -rf build deps src \
 && mkdir -p build/Release \
 && mv /tmp/better_sqlite3.node build/Release/

# ---------------------------------------------------------------------------
# The manifests the build's install needs: package.json, the lockfile, and the
# package.json of each workspace (package.json's globs, as the shell expands
# them). While they are unchanged, the build reuses its install.
FROM ${BASE} AS manifests
WORKDIR /src
COPY . .
RUN for dir in . $(node -p "require('./package.json').workspaces.join(' ')"); do \
      if [ -f "$dir/package.json" ]; then mkdir -p "/manifests/$dir" && cp "$dir/package.json" "/manifests/$dir/"; fi; \
    done \
 && cp package-lock.json /manifests/

# ---------------------------------------------------------------------------
# The build: every dependency (no install scripts: the build compiles nothing),
# `npm run build` (dist/: the server, the CLI, the console), and the package
# `npm pack` makes of it, unpacked into /app (dist/, the migrations,
# package.json): what `npm install runledger-<version>.tgz` would install.
FROM ${BASE} AS build
WORKDIR /src
COPY --from=manifests /manifests/ ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build \
 && npm pack --ignore-scripts --pack-destination /tmp \
 && mkdir /app \
 && tar -xzf /tmp/runledger-*.tgz -C /app --strip-components=1

# ---------------------------------------------------------------------------
# The runtime: the package and its production dependencies, nothing else.
FROM ${BASE}
ARG BASE
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="runledger" \
      org.opencontainers.image.description="A GraphQL API that runs LLM agents durably and tells the truth about every attempt." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.base.name="${BASE}"

# tini runs as PID 1: it passes SIGTERM on to Node and reaps exited processes
# (an agent's MCP servers). The user `node` comes with the official Node images.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && (id -u node >/dev/null 2>&1 || useradd --uid 1000 --user-group --create-home --shell /bin/sh node) \
 && mkdir -p /data \
 && chown node:node /data

# A container's loopback is its own: listen on every interface, and set
# API_TOKEN or AUTH_* (without them every caller is an admin). The SQLite
# default lives in the volume; set DATABASE_URL to a PostgreSQL URL to use one.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=4000 \
    DATABASE_URL=file:/data/runledger.db

WORKDIR /app
COPY --from=build /app ./
COPY --from=deps /app/node_modules ./node_modules
RUN ln -s /app/dist/cli.js /usr/local/bin/runledger

USER node
VOLUME /data
EXPOSE 4000

# /ready: 503 until the database, the event bus and Ollama's model answer.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 4000) + '/ready', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--"]
# Exec form: Node receives the signal, never a shell or npm. `runledger migrate`
# (or `node dist/cli.js migrate`) in its place applies the migrations and exits.
CMD ["node", "dist/cli.js", "serve"]
