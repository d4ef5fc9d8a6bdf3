#!/usr/bin/env bash
# pg-primary, first start only: the official postgres image runs every script in
# /docker-entrypoint-initdb.d/ once, against a temporary socket-only server, when the data
# volume is empty (never again afterwards: to redo it, remove the pg-primary-data volume).
#
# It creates
#   - the role `decigraph` (LOGIN, password PG_DECIGRAPH_PASSWORD) and the database `decigraph`
#     it owns: decigraph creates its schema and tables itself on first connect, so it needs
#     CREATE on the database and nothing more (no superuser);
#   - the role `replicator` (REPLICATION, password PG_REPLICATION_PASSWORD) for pg-standby;
#   - the physical replication slot `pg_standby`, so the primary keeps the WAL the standby has
#     not received yet (capped by max_slot_wal_keep_size in docker-compose.yml);
#   - a pg_hba.conf line letting `replicator` open replication connections (the image already
#     allows ordinary connections from the network with scram-sha-256).
#
# The server runs with synchronous_standby_names set (docker-compose.yml), and no standby exists
# yet: a COMMIT here would wait for one forever. These sessions commit locally instead
# (synchronous_commit=local); decigraph's own sessions keep the server's setting (on).
set -Eeo pipefail

: "${PG_DECIGRAPH_PASSWORD:?set PG_DECIGRAPH_PASSWORD (password of the decigraph role)}"
: "${PG_REPLICATION_PASSWORD:?set PG_REPLICATION_PASSWORD (password of the replicator role)}"
: "${PGDATA:?PGDATA is set by the postgres image}"

PGOPTIONS="-c synchronous_commit=local" psql -v ON_ERROR_STOP=1 --no-psqlrc \
    --username "${POSTGRES_USER:-postgres}" --dbname postgres \
    --set decigraph_password="$PG_DECIGRAPH_PASSWORD" \
    --set replication_password="$PG_REPLICATION_PASSWORD" <<'EOSQL'
CREATE ROLE decigraph WITH LOGIN PASSWORD :'decigraph_password';
CREATE DATABASE decigraph OWNER decigraph;
CREATE ROLE replicator WITH REPLICATION LOGIN PASSWORD :'replication_password';
SELECT pg_create_physical_replication_slot('pg_standby');
EOSQL

cat >> "$PGDATA/pg_hba.conf" <<'EOF'

# pg-standby streams from here (deploy/compose/pg-standby-entrypoint.sh)
host replication replicator all scram-sha-256
EOF
