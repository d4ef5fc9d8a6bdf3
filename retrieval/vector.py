"""Cosine top-k over precomputed vectors, kept in ChromaDB, with a durable watermark.

Vectors come from :mod:`retrieval.embedder`; this module never embeds text. Every collection is
opened with ``embedding_function=None`` and every write or query passes ``embeddings=``
explicitly, so Chroma never reaches for its default model (which it would try to download).

``chromadb`` is imported inside the constructors only: importing it costs about half a second,
which commands that never touch the vector index should not pay.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from graph.errors import BackendUnavailableError
from graph.tracing import span

if TYPE_CHECKING:
    from chromadb.api.client import Client
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import Metadata, Where
    from chromadb.config import Settings

MetaScalar = str | int | float | bool
MetaValue = MetaScalar | list[str]

# The watermark lives in the collection's own metadata, so it is exactly as durable as the
# vectors, needs no reserved record to hide from queries, and disappears with the collection.
_WATERMARK_SEQ = "decigraph_watermark_seq"
_WATERMARK_HASH = "decigraph_watermark_hash"
# Duplicate texts embed identically, so ties at the k-th place are real; fetching a few extra
# neighbours lets the id tie-break, not HNSW traversal order, decide which of them make the cut.
_TIE_MARGIN = 8


class VectorIndexError(BackendUnavailableError):
    """ChromaDB failed or could not be reached; the message says which operation and where."""


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One nearest neighbour: its id and cosine similarity in [-1, 1]."""

    id: str
    score: float


@dataclass(frozen=True, slots=True)
class Watermark:
    """The last event-log entry whose effects the index holds."""

    seq: int
    hash: str  # a different hash at the same seq means the log was replaced


class VectorIndex(Protocol):
    """What the retrieval layer needs from a vector store."""

    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        metadatas: Sequence[Mapping[str, MetaScalar | list[str]]],
    ) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def query(
        self, vector: np.ndarray, k: int, where: Mapping[str, Any] | None = None
    ) -> list[VectorHit]: ...

    def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    def all_ids(self) -> set[str]: ...

    def fingerprints(self, key: str = "fp") -> dict[str, str]: ...

    def count(self) -> int: ...

    def watermark(self) -> Watermark | None: ...

    def set_watermark(self, mark: Watermark) -> None: ...

    def reset(self) -> None: ...

    def close(self) -> None: ...


def _owner_only(root: Path) -> None:
    """Make ChromaDB's files owner-only (0600, directories 0700), like the log: it creates them
    with the process umask. Files it adds later sit inside ``root``, which is 0700. Best effort:
    a file this user may use but not chmod stays as it is."""
    for entry in [root, *root.rglob("*")]:
        if not entry.is_symlink():
            with suppress(OSError):
                entry.chmod(0o700 if entry.is_dir() else 0o600)


class ChromaVectorIndex:
    """A :class:`VectorIndex` backed by one ChromaDB collection in cosine space.

    Open it with :meth:`persistent` (embedded, on disk), :meth:`http` (a Chroma server) or
    :meth:`ephemeral` (in memory).

    Metadata values may be scalars or non-empty lists of strings; Chroma 1.5 stores lists as
    arrays, so ``where={"tags": {"$contains": "db"}}`` matches records whose ``tags`` hold
    ``"db"``. ``None`` values and empty lists are dropped (the key is then absent).
    """

    def __init__(self, client: Client, collection: str, location: str) -> None:
        self._client = client
        self._name = collection
        self._location = location
        self._closed = False
        self._drop_on_close = False
        #: An embedded store (in this process, on a local disk) rather than a server.
        self.embedded = False
        self._dimension: int | None = None
        self._batch_limit: int | None = None
        try:
            self._collection = self._open_collection()
        except BaseException:
            client.close()
            raise

    @classmethod
    def persistent(cls, path: Path, collection: str = "decigraph") -> ChromaVectorIndex:
        """Open (creating if needed) ``collection`` in an embedded ChromaDB stored at ``path``."""
        import chromadb

        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        with _translated_errors(f"opening ChromaDB at {path}"):
            # The factories are typed as ClientAPI but build a Client, which is what has close().
            client = cast("Client", chromadb.PersistentClient(path=str(path), settings=_settings()))
        _owner_only(path)
        index = cls(client, collection, str(path))
        index.embedded = True
        return index

    @classmethod
    def ephemeral(cls, collection: str) -> ChromaVectorIndex:
        """An in-memory ChromaDB collection that lives as long as the process.

        Ephemeral clients in one process share their collections, so give each user its own
        ``collection`` name. Used by read-only views that must not write to the owner's index.
        """
        import chromadb

        with _translated_errors("opening an in-memory ChromaDB"):
            client = cast("Client", chromadb.EphemeralClient(settings=_settings()))
        index = cls(client, collection, "memory")
        index._drop_on_close = True
        return index

    @classmethod
    def http(
        cls, url: str, collection: str = "decigraph", token: str | None = None
    ) -> ChromaVectorIndex:
        """Connect to a Chroma server at ``url``, e.g. ``"http://127.0.0.1:8000"``.

        The port defaults to 8000 (443 for https); ``token`` is sent as a bearer token.
        Raises ``ValueError`` for a URL that is not http(s) or has a path, and
        :class:`VectorIndexError` if the server cannot be reached.
        """
        host, port, ssl = _parse_server_url(url)
        import chromadb

        settings = _settings()
        if token is not None:
            settings.chroma_client_auth_provider = (
                "chromadb.auth.token_authn.TokenAuthClientProvider"
            )
            settings.chroma_client_auth_credentials = token
        with _translated_errors(f"connecting to ChromaDB at {url}"):
            client = cast(
                "Client", chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings)
            )
        return cls(client, collection, url)

    # -- writes ------------------------------------------------------------------------------
    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        metadatas: Sequence[Mapping[str, MetaScalar | list[str]]],
    ) -> None:
        """Insert or replace records; a replaced record keeps none of its old metadata keys.

        Raises ``ValueError`` if lengths disagree, ids repeat, a vector is not finite or has
        another dimension than the collection's, or a metadata value has an unsupported type.
        """
        id_list = _id_list(ids)
        if not id_list:
            if len(metadatas) or np.size(vectors):
                raise ValueError("upsert got vectors or metadata but no ids")
            return
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(id_list) or len(metadatas) != len(id_list):
            raise ValueError(
                f"upsert needs one vector row and one metadata mapping per id: {len(id_list)} "
                f"ids, vectors of shape {matrix.shape}, {len(metadatas)} metadata mappings"
            )
        if len(set(id_list)) != len(id_list):
            raise ValueError("upsert got the same id more than once")
        _require_finite(matrix, "upsert")
        self._require_dimension(matrix.shape[1], "upsert")
        cleaned = [_clean_metadata(meta) for meta in metadatas]
        step = self._batch_size()
        for start in range(0, len(id_list), step):
            stop = start + step
            self._upsert_batch(id_list[start:stop], matrix[start:stop], cleaned[start:stop])
        self._dimension = matrix.shape[1]

    def _upsert_batch(
        self, ids: list[str], matrix: npt.NDArray[np.float32], metadatas: list[dict[str, MetaValue]]
    ) -> None:
        # Chroma merges the metadata of an existing record with the new one; keys the caller
        # no longer sends must be cleared explicitly (a None value deletes the key).
        with self._call("reading metadata before upsert"):
            existing = self._collection.get(ids=ids, include=["metadatas"])
        previous = dict(zip(existing["ids"], existing["metadatas"] or [], strict=True))
        payload: list[dict[str, MetaValue | None] | None] = []
        for record_id, meta in zip(ids, metadatas, strict=True):
            stale = {key: None for key in previous.get(record_id) or {} if key not in meta}
            payload.append({**meta, **stale} or None)
        send = cast("list[Metadata]", payload) if any(payload) else None
        with self._call("upsert"):
            self._collection.upsert(ids=ids, embeddings=matrix, metadatas=send)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove records; ids the index does not hold are ignored."""
        id_list = _id_list(ids)
        step = self._batch_size() if id_list else 1
        for start in range(0, len(id_list), step):
            with self._call("delete"):
                self._collection.delete(ids=id_list[start : start + step])

    # -- reads -------------------------------------------------------------------------------
    def query(
        self, vector: np.ndarray, k: int, where: Mapping[str, Any] | None = None
    ) -> list[VectorHit]:
        """The ``k`` nearest records by cosine similarity, best first, ties by ascending id.

        ``vector`` has shape ``(d,)`` or ``(1, d)``; ``k`` may exceed the collection size.
        ``where`` is a Chroma metadata filter passed through unchanged (``None`` or ``{}``: none).
        """
        if k < 0:
            raise ValueError(f"k must be non-negative, got {k}")
        probe = np.asarray(vector, dtype=np.float32)
        if probe.ndim == 2 and probe.shape[0] == 1:
            probe = probe[0]
        if probe.ndim != 1:
            raise ValueError(f"query needs a single vector, got shape {probe.shape}")
        _require_finite(probe, "query")
        self._require_dimension(probe.shape[0], "query")
        if k == 0:
            return []
        # Chroma 1.5 clamps n_results to the collection size itself; asking for the count
        # first cost ~10 ms per query at 100k records.
        with self._call("query"):
            result = self._collection.query(
                query_embeddings=probe.reshape(1, -1),
                n_results=k + _TIE_MARGIN,
                where=cast("Where", dict(where)) if where else None,
                include=["distances"],
            )
        distances = (result["distances"] or [[]])[0]
        hits = [
            VectorHit(record_id, _similarity(distance))
            for record_id, distance in zip(result["ids"][0], distances, strict=True)
        ]
        hits.sort(key=lambda hit: (-hit.score, hit.id))
        return hits[:k]

    def get_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored float32 vectors by id; ids the index does not hold are left out."""
        id_list = list(dict.fromkeys(_id_list(ids)))
        found: dict[str, np.ndarray] = {}
        step = self._batch_size() if id_list else 1
        for start in range(0, len(id_list), step):
            with self._call("reading vectors"):
                result = self._collection.get(
                    ids=id_list[start : start + step], include=["embeddings"]
                )
            embeddings = result["embeddings"]
            if embeddings is None:
                continue
            for record_id, embedding in zip(result["ids"], embeddings, strict=True):
                found[record_id] = np.array(embedding, dtype=np.float32)
        return found

    def fingerprints(self, key: str = "fp") -> dict[str, str]:
        """Each record's ``key`` metadata value (records without it map to ``""``), paged."""
        out: dict[str, str] = {}
        page = self._batch_size()
        offset = 0
        while True:
            with self._call("reading fingerprints"):
                result = self._collection.get(include=["metadatas"], limit=page, offset=offset)
            metadatas = result["metadatas"] or []
            for record_id, meta in zip(result["ids"], metadatas, strict=True):
                out[record_id] = str((meta or {}).get(key, ""))
            if len(result["ids"]) < page:
                return out
            offset += page

    def all_ids(self) -> set[str]:
        """Every record id in the collection."""
        with self._call("listing ids"):
            return set(self._collection.get(include=[])["ids"])

    def count(self) -> int:
        """Number of records."""
        with self._call("count"):
            return self._collection.count()

    # -- watermark and lifecycle -------------------------------------------------------------
    def watermark(self) -> Watermark | None:
        """The stored watermark, or ``None`` if none was ever set (or after :meth:`reset`)."""
        metadata = self._fresh_metadata()
        seq, event_hash = metadata.get(_WATERMARK_SEQ), metadata.get(_WATERMARK_HASH)
        if isinstance(seq, int) and not isinstance(seq, bool) and isinstance(event_hash, str):
            return Watermark(seq, event_hash)
        return None

    def set_watermark(self, mark: Watermark) -> None:
        """Durably record ``mark`` in the collection metadata, keeping its other keys."""
        # modify() replaces the whole mapping and refuses any "hnsw:" key, even unchanged; the
        # distance space itself is kept in the collection configuration, which it leaves alone.
        metadata = {
            key: value
            for key, value in self._fresh_metadata().items()
            if not key.startswith("hnsw:")
        }
        metadata[_WATERMARK_SEQ] = mark.seq
        metadata[_WATERMARK_HASH] = mark.hash
        with self._call("storing the watermark"):
            self._collection.modify(metadata=metadata)

    def reset(self) -> None:
        """Drop every record and the watermark, leaving an empty collection."""
        from chromadb.errors import NotFoundError

        with self._call("reset"), suppress(NotFoundError):
            self._client.delete_collection(self._name)
        self._dimension = None
        self._collection = self._open_collection()

    def close(self) -> None:
        """Release the client (for the embedded store: its SQLite handles). Idempotent."""
        if not self._closed:
            if self._drop_on_close:  # in-memory collections outlive their client otherwise
                with suppress(Exception):
                    self._client.delete_collection(self._name)
            self._closed = True
            self._client.close()

    # -- helpers -----------------------------------------------------------------------------
    @contextmanager
    def _call(self, action: str) -> Iterator[None]:
        if self._closed:
            raise VectorIndexError(f"{action}: the vector index {self._name!r} is closed")
        where = f"{action} on collection {self._name!r} at {self._location}"
        with span("index.chroma", action=action), _translated_errors(where):
            yield

    def _open_collection(self) -> Collection:
        with self._call("opening the collection"):
            collection = self._client.get_or_create_collection(
                name=self._name,
                configuration={"hnsw": {"space": "cosine"}},
                embedding_function=None,
            )
        space = _distance_space(collection.configuration_json, collection.metadata)
        if space != "cosine":
            raise VectorIndexError(
                f"collection {self._name!r} at {self._location} uses {space!r} distance, "
                "not cosine; delete it or choose another collection name"
            )
        return collection

    def _fresh_metadata(self) -> dict[str, Any]:
        # Re-read from Chroma: another client may have moved the watermark since we opened.
        with self._call("reading collection metadata"):
            collection = self._client.get_collection(self._name, embedding_function=None)
        return dict(collection.metadata or {})

    def _require_dimension(self, dimension: int, action: str) -> None:
        if self._dimension is None:
            with self._call("reading the collection dimension"):
                fresh = self._client.get_collection(self._name, embedding_function=None)
            self._dimension = fresh.get_model().dimension
        if self._dimension is not None and dimension != self._dimension:
            raise ValueError(
                f"{action}: vector dimension {dimension} does not match the "
                f"{self._dimension}-dimensional vectors in collection {self._name!r}"
            )

    def _batch_size(self) -> int:
        if self._batch_limit is None:
            with self._call("reading the maximum batch size"):
                self._batch_limit = max(1, self._client.get_max_batch_size())
        return self._batch_limit


@contextmanager
def _translated_errors(action: str) -> Iterator[None]:
    """Re-raise whatever ChromaDB or the network throws as :class:`VectorIndexError`."""
    import httpx
    from chromadb.errors import ChromaError

    try:
        yield
    except VectorIndexError:
        raise
    except ChromaError as exc:
        # Another writer may have fixed the dimension after we cached it.
        if "dimension" in str(exc):
            raise ValueError(f"{action}: {exc}") from exc
        raise VectorIndexError(f"{action} failed: {exc}") from exc
    except (ValueError, RuntimeError, OSError, httpx.HTTPError) as exc:
        # Chroma reports an unreachable server (and its own validation) as ValueError.
        raise VectorIndexError(f"{action} failed: {exc}") from exc


def _settings() -> Settings:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False)


def _parse_server_url(url: str) -> tuple[str, int, bool]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"expected an http(s) URL like http://127.0.0.1:8000, got {url!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"a Chroma server URL takes no path or query, got {url!r}")
    ssl = parts.scheme == "https"
    return parts.hostname, parts.port or (443 if ssl else 8000), ssl


def _id_list(ids: Sequence[str]) -> list[str]:
    if isinstance(ids, str):
        raise TypeError("ids must be a sequence of strings, not a single string")
    return list(ids)


def _require_finite(values: npt.NDArray[np.float32], action: str) -> None:
    if not np.isfinite(values).all():
        raise ValueError(f"{action}: vectors must be finite (found NaN or infinity)")


def _clean_metadata(meta: Mapping[str, object]) -> dict[str, MetaValue]:
    cleaned: dict[str, MetaValue] = {}
    for key, value in meta.items():
        if value is None or (isinstance(value, list) and not value):
            # Chroma rejects empty lists and reads None as "delete this key"; an absent key
            # filters the same way as either.
            continue
        if isinstance(value, str | int | float | bool):
            cleaned[key] = value
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            cleaned[key] = list(cast("list[str]", value))
        else:
            raise ValueError(
                f"metadata {key!r} must be str, int, float, bool or a list of str, "
                f"got {type(value).__name__}"
            )
    return cleaned


def _distance_space(configuration: Mapping[str, Any], metadata: Mapping[str, Any] | None) -> str:
    for index_kind in ("hnsw", "spann"):
        settings = configuration.get(index_kind)
        if isinstance(settings, Mapping) and settings.get("space"):
            return str(settings["space"])
    return str((metadata or {}).get("hnsw:space", "l2"))


def _similarity(cosine_distance: float) -> float:
    # Rounding can push 1 - distance a hair outside [-1, 1]. Comparisons, not np.clip (5 us a
    # scalar, ~80 per query); NaN passes through, as in np.clip.
    value = float(1.0 - cosine_distance)
    return 1.0 if value > 1.0 else -1.0 if value < -1.0 else value


if TYPE_CHECKING:
    # Protocols are structural: nothing else would notice the class drifting from the interface.
    def _conforms(index: ChromaVectorIndex) -> VectorIndex:
        return index
