#!/bin/sh
# Print the pip flags needed to find torch==2.13.0+cpu, or nothing when pip already sees it.
# The CPU build is published on PyTorch's own package index, not on PyPI; machines that mirror
# the wheel locally (a find-links directory or a local index in pip.conf) need no extra index.
# Usage: torch-index-flags.sh PYTHON
set -u
python=${1:-python3}
index=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
if "$python" -m pip install --dry-run --no-deps --quiet "torch==2.13.0+cpu" >/dev/null 2>&1; then
    exit 0
fi
echo "--extra-index-url $index"
