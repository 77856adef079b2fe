#!/usr/bin/env bash
# `make test` runs a browser test in the system's Chromium (/usr/bin/chromium). Install it when it is
# missing and this machine allows (root with apt-get), otherwise stop with one line that says how.
set -euo pipefail
if [[ -x /usr/bin/chromium ]]; then
    exit 0
fi
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "make test: installing Chromium for the browser test (apt-get install chromium, once)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    exit 0
fi
echo "make test: the browser test needs Chromium at /usr/bin/chromium: install it (sudo apt-get install chromium) and run make test again" >&2
exit 1
