#!/usr/bin/env bash
# sparkcdc's cache directory, defined once for every script (they source this file and call
# sparkcdc_cache_dir) and matched by Python's sparkcdc.paths.cache_dir (tests/unit/test_paths.py
# runs both and compares them):
#   $SPARKCDC_CACHE_DIR, else $XDG_CACHE_HOME/sparkcdc, else ~/.cache/sparkcdc (empty counts as unset).
# Outside the work tree by default, so every fresh clone on a machine (CI clones afresh) reuses it.
# Run rather than sourced, it prints the directory.
sparkcdc_cache_dir() {
  echo "${SPARKCDC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sparkcdc}"
}

# The Go toolchain the scripts that build into the cache use (binlogdec, kube binaries, promtool,
# gh-ost): $GO, else go on PATH, else the machine's /usr/local/go.
sparkcdc_go() {
  if [ -n "${GO:-}" ]; then echo "$GO"; return; fi
  command -v go 2>/dev/null || echo /usr/local/go/bin/go
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  sparkcdc_cache_dir
fi
