"""The one validated settings object (env prefix ``DECIGRAPH_``; CLI flags override)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="DECIGRAPH_", extra="ignore")

    data_dir: Path = Path("./data")
    host: str = "127.0.0.1"
    port: int = Field(default=8100, ge=1, le=65535)
    fsync: Literal["always", "never"] = "always"
    snapshot_every: int = Field(default=10_000, ge=0)
    chroma_url: str | None = None
    """A ChromaDB server (``http://host:port``); unset: an embedded store in ``data_dir/chroma``."""
    chroma_collection: str = Field(default="decigraph", min_length=3, max_length=512)
    chroma_token: str | None = None
