python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD/src KERNELCRAFT_CACHE=/tmp/kc_cache PYTHONUNBUFFERED=1
timeout 150 python3 -m kernelcraft eval tasks/rmsnorm tasks/rmsnorm/solutions/triton_rowwise.py --device cuda --no-peers --workload 19a11d82 --workload e211ec53 --json $OUT/s.json > /dev/null 2>&1
python3 -c "
import json; r=json.load(open('$OUT/s.json'))
for s in r['solutions']: print(s['name'], s['status'], (s.get('reason') or '')[:300]); print(json.dumps(s.get('confirmation'))[:2500])"
