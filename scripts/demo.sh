#!/usr/bin/env bash
# The README's first command: installs PostgreSQL + PostGIS if missing, then
# runs geoingest's main job on the embedded default (a private PostGIS it
# starts itself; local files as the bucket).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec go run ./cmd/geoingest demo "$@"
