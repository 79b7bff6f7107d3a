"""Maps callgrind's self cost at anonymous JIT addresses to the JS
functions JSC compiled there (from its BUN_JSC_dumpDisassembly output).

    python3 jitmap.py DUMP CALLGRIND_OUT ITERATIONS [TOP]
"""
import re
import subprocess
import sys

dump, profile = sys.argv[1], sys.argv[2]
iterations = float(sys.argv[3])
top = int(sys.argv[4]) if len(sys.argv) > 4 else 25

# Code ranges of each compiled function, in the order JSC made them (an
# address reused later belongs to the later function).
ranges = []
current = None
for line in open(dump, errors="replace"):
    header = re.match(r"Generated (.*?) code for (.*?)(?:, instructions size|:\s*\[|$)", line)
    if header:
        name = re.sub(r"#\w+:\[.*", "", header.group(2))
        current = f"{header.group(1)}: {name}"
        span = re.search(r"\[0x([0-9a-f]+), 0x([0-9a-f]+)\)", line)
        if span:
            ranges.append((int(span.group(1), 16), int(span.group(2), 16), current))
        continue
    span = re.search(r"Code at \[0x([0-9a-f]+), 0x([0-9a-f]+)\)", line)
    if span and current:
        ranges.append((int(span.group(1), 16), int(span.group(2), 16), current))
        continue
    for start, end in re.findall(r"range 0x([0-9a-f]+)\.\.\.0x([0-9a-f]+)", line):
        if current:
            ranges.append((int(start, 16), int(end, 16), current))

annotated = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", profile], capture_output=True, text=True, check=True).stdout
cost = {}
by_object = {}
for line in annotated.splitlines():
    row = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*)", line)
    if not row or "PROGRAM TOTALS" in line:
        continue
    n = int(row.group(1).replace(",", ""))
    where = row.group(2)
    jit = re.match(r"\?\?\?:0x([0-9a-f]+)(?:'\d+)? \[\?\?\?\]", where)
    obj = "JIT code" if jit else (where.rsplit("[", 1)[-1].rstrip("]").split("/")[-1] if "[" in where else "(inlined)")
    by_object[obj] = by_object.get(obj, 0) + n
    if not jit:
        continue
    address = int(jit.group(1), 16)
    name = "(unmapped JIT code)"
    for start, end, owner in ranges:
        if start <= address < end:
            name = owner
    cost[name] = cost.get(name, 0) + n

print("per iteration, by object:")
for obj, n in sorted(by_object.items(), key=lambda x: -x[1])[:8]:
    print(f"{n / iterations:10.0f}  {obj}")
print("per iteration, JIT code by function:")
for name, n in sorted(cost.items(), key=lambda x: -x[1])[:top]:
    print(f"{n / iterations:10.0f}  {name}")
