# Can ncu profile a target that runs in its own pid namespace (unshare --pid --fork)?
prog="import torch;x=torch.ones(1<<20,device='cuda');torch.cuda.synchronize();(x*2).sum().item()"
for wrap in "" "unshare --pid --fork --mount-proc --net"; do
  echo "== ncu target wrapped in: ${wrap:-nothing}"
  timeout 120 ncu --metrics gpu__time_duration.sum --csv --clock-control none --target-processes all $wrap python3 -c "$prog" 2>&1 | grep -c gpu__time_duration
done
