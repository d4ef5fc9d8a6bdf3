#!/usr/bin/env bash
# pg-standby's entrypoint: on first start (no PG_VERSION in the data volume) clone pg-primary
# with pg_basebackup -R, then start the server through the postgres image's own entrypoint, which
# skips its initialisation because the directory now holds a cluster.
#
# -R (--write-recovery-conf) writes standby.signal and primary_conninfo (with the connection's
# settings, application_name=pg_standby among them) into postgresql.auto.conf: the server then
# starts as a hot standby streaming from pg-primary through the slot `pg_standby`. Its
# application_name is the name the primary's synchronous_standby_names lists, so this standby is
# the synchronous one and every commit on the primary waits until it has the WAL on disk.
# cluster_name (set in docker-compose.yml) names it the same, should primary_conninfo lose the
# setting.
#
# Once cloned, the volume is left alone on every later start, including after a promotion
# (`pg_ctl promote` removes standby.signal). To re-clone, remove the pg-standby-data volume.
set -Eeo pipefail

: "${PG_REPLICATION_PASSWORD:?set PG_REPLICATION_PASSWORD (password of the replicator role)}"
: "${PGDATA:?PGDATA is set by the postgres image}"
PRIMARY_HOST="${PRIMARY_HOST:-pg-primary}"
PRIMARY_PORT="${PRIMARY_PORT:-5432}"
STANDBY_NAME="${STANDBY_NAME:-pg_standby}"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    # The image's entrypoint runs as root and drops to `postgres`; so does this one.
    mkdir -p "$PGDATA"
    chown postgres:postgres "$PGDATA"
    chmod 0700 "$PGDATA"
    # An earlier attempt that died half-way (pg_basebackup removes its own leftovers on error,
    # a killed container does not).
    find "$PGDATA" -mindepth 1 -delete

    echo "pg-standby: waiting for $PRIMARY_HOST:$PRIMARY_PORT"
    until pg_isready -q -h "$PRIMARY_HOST" -p "$PRIMARY_PORT"; do
        sleep 2
    done
    echo "pg-standby: cloning $PRIMARY_HOST with pg_basebackup"
    # PGPASSWORD only for pg_basebackup; primary_conninfo records the password for the standby.
    PGPASSWORD="$PG_REPLICATION_PASSWORD" gosu postgres pg_basebackup \
        --pgdata="$PGDATA" \
        --dbname="host=$PRIMARY_HOST port=$PRIMARY_PORT user=replicator application_name=$STANDBY_NAME" \
        --slot="$STANDBY_NAME" \
        --wal-method=stream \
        --checkpoint=fast \
        --write-recovery-conf \
        --no-password
    echo "pg-standby: cloned; starting as a standby"
fi

exec docker-entrypoint.sh "$@"
