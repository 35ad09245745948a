"""Which peer libraries import here, each with its version or its error (device scripts: a quack that does not
import stops a chain before its evals). The .pth files of PYTHONPATH folders (nvidia-cutlass-dsl's) are read first,
as site does for site-packages.   usage: python3 scripts/peers_import.py > $OUT/peers_import.txt"""
import os
import site

for e in os.environ.get("PYTHONPATH", "").split(":"):
    if e and os.path.isdir(e) and any(f.endswith(".pth") for f in os.listdir(e)):
        site.addsitedir(e)
for m in ("quack", "liger_kernel", "fla", "flashinfer", "cutlass"):
    try:
        mod = __import__(m)
        print(m, getattr(mod, "__version__", "?"))
    except Exception as e:  # noqa: BLE001 - each library's failure is what this reports
        print(m, "FAILED", type(e).__name__, str(e)[:200])
