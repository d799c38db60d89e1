"""A fresh PostgreSQL database per test, on the server ``MODULE6_PG_URL`` names (started by .ci/run)."""

from __future__ import annotations

import os
import secrets

import pytest


def fresh_database(prefix: str) -> tuple:
    """``(url, drop)``: a new database ``<prefix>_<random>`` and the function that drops it.

    Skips where no server is named, except on CI, which must provide one (a skipped PostgreSQL test
    would otherwise pass there without having run).
    """
    url = os.environ.get("MODULE6_PG_URL")
    if not url:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("MODULE6_PG_URL is not set: CI must provide a PostgreSQL server")
        pytest.skip("MODULE6_PG_URL is not set (no PostgreSQL server)")
    import psycopg2
    from sqlalchemy.engine import make_url

    server = make_url(url)
    name = f"{prefix}_{secrets.token_hex(4)}"
    admin = psycopg2.connect(host=server.host, port=server.port or 5432, user=server.username,
                             password=server.password, dbname=server.database or "postgres")
    admin.autocommit = True
    admin.cursor().execute(f"CREATE DATABASE {name}")

    def drop():
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()

    # SQLAlchemy 2.1 defaults postgresql:// to psycopg 3; the environments have psycopg2.
    return server.set(drivername="postgresql+psycopg2", database=name).render_as_string(hide_password=False), drop
