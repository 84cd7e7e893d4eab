#!/usr/bin/env python3
"""Write a snapshot whose stacks hold N distinct frames, for the rules
benchmark (bench/rules.sh): N allocations of 512 B inside one segment, each
with a stack of its own frame (`step_K` in `/srv/app/mod_K.py`) over two
shared ones, all freed at the end.  stdlib only.

    python3 bench/gen_frames.py OUT.pickle [N]      (default 100,000)
"""
import pickle
import sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
size = 512
total = n * size
shared = [{"name": "forward", "filename": "/srv/app/model.py", "line": 10},
          {"name": "train", "filename": "/srv/app/train.py", "line": 3}]
trace = [{"action": "segment_alloc", "addr": 0, "size": total, "stream": 0, "frames": []}]
for k in range(n):
    frames = [{"name": f"step_{k}", "filename": f"/srv/app/mod_{k}.py", "line": k}] + shared
    trace.append({"action": "alloc", "addr": k * size, "size": size, "stream": 0, "frames": frames})
for k in range(n):
    trace.append({"action": "free_requested", "addr": k * size, "size": size, "stream": 0, "frames": []})
    trace.append({"action": "free_completed", "addr": k * size, "size": size, "stream": 0, "frames": []})
segment = {"device": 0, "address": 0, "total_size": total, "allocated_size": 0,
           "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large",
           "blocks": [{"address": 0, "size": total, "requested_size": 0, "state": "inactive"}]}
with open(out, "wb") as f:
    pickle.dump({"segments": [segment], "device_traces": [trace]}, f, protocol=4)
