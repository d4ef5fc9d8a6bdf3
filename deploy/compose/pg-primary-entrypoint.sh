#!/usr/bin/env bash
# pg-primary's entrypoint: check the passwords, then hand over to the postgres image's own
# entrypoint (which initialises an empty volume, runs pg-primary-init.sh once, and starts the
# server with the command's arguments).
#
# Checked here, before anything is written: a password missing at first start would otherwise
# make pg-primary-init.sh fail after initdb, leaving a half-initialised volume that the image
# then starts as if it were complete.
set -Eeo pipefail

missing=()
[ -n "${POSTGRES_PASSWORD:-}" ] || missing+=("PG_SUPERUSER_PASSWORD")
[ -n "${PG_DECIGRAPH_PASSWORD:-}" ] || missing+=("PG_DECIGRAPH_PASSWORD")
[ -n "${PG_REPLICATION_PASSWORD:-}" ] || missing+=("PG_REPLICATION_PASSWORD")
if [ "${#missing[@]}" -gt 0 ]; then
    echo "pg-primary: set ${missing[*]} in the environment of docker compose" \
        "(e.g. export PG_DECIGRAPH_PASSWORD=\$(openssl rand -hex 24))" >&2
    exit 1
fi
# The decigraph replicas put this password into a postgresql:// URL unescaped.
if [[ ! "$PG_DECIGRAPH_PASSWORD" =~ ^[A-Za-z0-9._~-]+$ ]]; then
    echo "pg-primary: PG_DECIGRAPH_PASSWORD goes into a URL: use only letters, digits and" \
        "'.', '_', '~', '-' (openssl rand -hex 24 gives such a password)" >&2
    exit 1
fi

exec docker-entrypoint.sh "$@"
