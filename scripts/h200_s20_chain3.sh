#!/usr/bin/env bash
# Next session, chain call 3 of 4, within 30 s of call 2 (<= 60 s). carry: [".whl-peers/parts/<libs-cu13>.part-01"]
#   command: bash scripts/h200_s20_chain3.sh          (stashes the second part; nothing else fits beside 40 MB)
set -u
mkdir -p /tmp/whl-parts && cp .whl-peers/parts/*.part-01 /tmp/whl-parts/ && ls -la /tmp/whl-parts
