#!/bin/bash
# real_python_client.sh - python_client.py with the newest official Python client (the peers
# venv, make peers) against a real control plane (tools/realk8s.sh) instead of kubesim.
# deadline: 150
. "$(dirname "$0")/lib_real.sh"
real_require || exit 0
PY=$REAL_ROOT/.peers/venv/bin/python
[ -x "$PY" ] || { echo "skip - real_python_client.sh: no peers venv (run make peers)"; exit 0; }
echo "# kubernetes client $("$PY" -c 'import kubernetes; print(kubernetes.__version__)')"
exec "$PY" "$(dirname "$0")/python_client.py"
