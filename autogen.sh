#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Regenerate the build system from a git checkout.
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf -fi
