#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The tarball's check of the protocol models (make distcheck-ci): every model file is packed
# and SPIN generates every configuration's verifier. The searches themselves, minutes long,
# run in make check (tests/model/run.sh) on the same sources.
exec "${BASH:-bash}" "$(dirname "$0")/run.sh" --parse
