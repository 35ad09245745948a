# Sourced by the device scripts (run from the repository root): install the wheels carried in .whl/
# (cp312, no index on the device machine) into /tmp/site and put them and src/ on PYTHONPATH.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src
