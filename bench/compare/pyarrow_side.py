# pyarrow's side of bench/compare.ts, run in the embedded interpreter.
# Every function times its own loop with time.perf_counter_ns, so the
# Bun -> Python call that starts it is not part of any figure.
import time
import pyarrow as pa

_now = time.perf_counter_ns
_batches = {}
_pairs = {}


def bench_keep(key, schema_addr, array_addr):
    """Imports a batch (once, untimed) that export blocks then export."""
    _batches[key] = pa.RecordBatch._import_from_c_device(array_addr, schema_addr)
    return _batches[key].num_rows


def bench_drop(key):
    _batches.pop(key, None)


def _slot_pairs(k, schemas, schema_size, arrays, array_size):
    key = (k, schemas, arrays)
    pairs = _pairs.get(key)
    if pairs is None:
        pairs = _pairs[key] = [(arrays + i * array_size, schemas + i * schema_size) for i in range(k)]
    return pairs


def bench_export(key, k, schemas, schema_size, arrays, array_size):
    """k exports of batch `key` into k C slots (released later from C)."""
    export = _batches[key]._export_to_c_device
    pairs = _slot_pairs(k, schemas, schema_size, arrays, array_size)
    t = _now()
    for a, s in pairs:
        export(a, s)
    return _now() - t


def bench_import(k, schemas, schema_size, arrays, array_size):
    """k imports of C-made batches from k slots, each released at once."""
    imp = pa.RecordBatch._import_from_c_device
    pairs = _slot_pairs(k, schemas, schema_size, arrays, array_size)
    t = _now()
    for a, s in pairs:
        b = imp(a, s)
        del b
    return _now() - t


def bench_stream(addr):
    """Imports a C ArrowArrayStream and reads it to its end: (ns, batches)."""
    t = _now()
    reader = pa.RecordBatchReader._import_from_c(addr)
    n = 0
    read = reader.read_next_batch
    while True:
        try:
            b = read()
        except StopIteration:
            break
        del b
        n += 1
    del reader
    return "%d %d" % (_now() - t, n)


def bench_round_trip(key, k, schemas, schema_size, arrays, array_size):
    """k round trips of batch `key` through the C Device Data Interface:
    export into a C slot, import it back, drop it (its release runs)."""
    export = _batches[key]._export_to_c_device
    imp = pa.RecordBatch._import_from_c_device
    pairs = _slot_pairs(k, schemas, schema_size, arrays, array_size)
    t = _now()
    for a, s in pairs:
        export(a, s)
        b = imp(a, s)
        del b
    return _now() - t


def bench_ipc(key, k):
    """k IPC stream round trips of batch `key` (write, then read back)."""
    batch = _batches[key]
    t = _now()
    for _ in range(k):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as writer:
            writer.write_batch(batch)
        back = pa.ipc.open_stream(sink.getvalue()).read_all()
        if back.num_rows != batch.num_rows:
            raise ValueError("pyarrow IPC: wrong row count")
        del back
    return _now() - t
