r"""A per-user secret that signs the audit cache, so that a file this user's symuat did not write is not trusted.

The key is 32 random bytes in ``$XDG_CONFIG_HOME/symuat/cache-key`` (else ``~/.config/symuat/cache-key``),
created with mode 0600 and kept outside the cache directory.  A cache file carries an HMAC-SHA256 of its
content under that key; :func:`verify` compares in constant time.  When the key cannot be created or read,
or is readable by others, :func:`user_key` returns ``None`` and the cache is neither read nor written.

>>> sign(b"k" * 32, b"payload") == sign(b"k" * 32, b"payload") != sign(b"k" * 32, b"payload!")
True
>>> verify(b"k" * 32, b"payload", sign(b"k" * 32, b"payload"))
True
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

__all__ = ["key_file", "user_key", "sign", "verify"]

_KEY_BYTES = 32


def key_file() -> Path:
    r"""Where the signing key lives: ``$XDG_CONFIG_HOME/symuat/cache-key``, else ``~/.config/symuat/cache-key``.

    >>> key_file().name
    'cache-key'
    """
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "symuat" / "cache-key"


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # another process created it first
    with os.fdopen(fd, "wb") as fh:
        fh.write(secrets.token_bytes(_KEY_BYTES))


def user_key(outside: Path | None = None) -> bytes | None:
    r"""This user's signing key, created on first use; ``None`` when it cannot be trusted or made.

    ``outside``: a directory the key must not lie in (the cache directory).
    """
    path = key_file()
    try:
        if outside is not None and path.resolve().is_relative_to(Path(outside).resolve()):
            return None
        if not path.exists():
            _create(path)
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077 or info.st_uid != os.getuid():
            return None
        key = path.read_bytes()
    except (OSError, RuntimeError, ValueError):
        return None
    return key if len(key) == _KEY_BYTES else None


def sign(key: bytes, payload: bytes) -> str:
    """The HMAC-SHA256 of ``payload`` under ``key``, hex."""
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def verify(key: bytes, payload: bytes, mac: str) -> bool:
    """Whether ``mac`` is :func:`sign` of ``payload`` (constant-time comparison)."""
    return isinstance(mac, str) and hmac.compare_digest(sign(key, payload), mac)
