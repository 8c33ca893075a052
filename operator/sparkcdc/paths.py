"""Where sparkcdc keeps files outside the work tree, as the scripts under hack/ and binlogdec/ do.

``cache_dir`` is the one cache directory of Python and of the shell scripts (their
``sparkcdc_cache_dir`` in ``hack/cache-dir.sh``): the Go decoder the scripts build must land where
``mysql/binlog/native.py`` looks for it, or catch-up silently decodes in Python, 10–25× slower.
``tests/unit/test_paths.py`` runs both resolutions and compares them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["BINLOGDEC_DIR", "cache_dir"]

# The Go binlog decoder's sources (and its VERSION) in the checkout sparkcdc runs from; an
# installation without the checkout has no such folder (the images set the decoder's path instead).
BINLOGDEC_DIR = Path(__file__).resolve().parents[2] / "binlogdec"


def cache_dir(env: Mapping[str, str]) -> Path:
    """``$SPARKCDC_CACHE_DIR``, else ``$XDG_CACHE_HOME/sparkcdc``, else ``~/.cache/sparkcdc`` in
    ``env`` (the composition root's environment); an empty variable counts as unset, as in the
    scripts' ``${VAR:-default}``."""
    if env.get("SPARKCDC_CACHE_DIR"):
        return Path(env["SPARKCDC_CACHE_DIR"])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "sparkcdc"
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    return home / ".cache" / "sparkcdc"
