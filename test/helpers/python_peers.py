"""Python side of test/peers/python.test.ts (loaded into the embedded interpreter by
test/helpers/python.ts): data of every type from the Python peers, buffer addresses,
and nanoarrow's validation."""
import decimal, datetime, gc
import pyarrow as pa
import nanoarrow as na
from nanoarrow.c_array import c_array_from_buffers

def all_pyarrow_types():
    """One column per pyarrow type, with nulls; the batch is sliced so every column has an offset."""
    n = [1, None, 3, 4, 5, 6]
    s = ["a", None, "ccc", "a string longer than twelve", "", "ß∂ƒ"]
    cols = {
        "null": pa.nulls(6),
        "bool": pa.array([True, None, False, True, False, True]),
        "int8": pa.array(n, pa.int8()), "uint8": pa.array(n, pa.uint8()),
        "int16": pa.array(n, pa.int16()), "uint16": pa.array(n, pa.uint16()),
        "int32": pa.array(n, pa.int32()), "uint32": pa.array(n, pa.uint32()),
        "int64": pa.array(n, pa.int64()), "uint64": pa.array(n, pa.uint64()),
        "float16": pa.array([1.5, None, 2.5, 3.0, 4.0, 5.0], pa.float16()),
        "float32": pa.array([1.5, None, 2.5, 3.0, 4.0, 5.0], pa.float32()),
        "float64": pa.array([1.5, None, 2.5, 3.0, 4.0, 5.0], pa.float64()),
        "decimal32": pa.array([decimal.Decimal("1.23"), None, decimal.Decimal("-4.56"), 0, 1, 2], pa.decimal32(7, 2)),
        "decimal64": pa.array([decimal.Decimal("1.23"), None, decimal.Decimal("-4.56"), 0, 1, 2], pa.decimal64(15, 2)),
        "decimal128": pa.array([decimal.Decimal("1.23"), None, decimal.Decimal("-4.56"), 0, 1, 2], pa.decimal128(30, 2)),
        "decimal256": pa.array([decimal.Decimal("1.23"), None, decimal.Decimal("-4.56"), 0, 1, 2], pa.decimal256(60, 2)),
        "utf8": pa.array(s, pa.string()), "large_utf8": pa.array(s, pa.large_string()),
        "utf8_view": pa.array(s, pa.string_view()),
        "binary": pa.array([x and x.encode() for x in s], pa.binary()),
        "large_binary": pa.array([x and x.encode() for x in s], pa.large_binary()),
        "binary_view": pa.array([x and x.encode() for x in s], pa.binary_view()),
        "fixed_binary": pa.array([b"abc", None, b"def", b"ghi", b"jkl", b"mno"], pa.binary(3)),
        "date32": pa.array([datetime.date(2020, 1, d) for d in (1, 2, 3, 4, 5, 6)], pa.date32()),
        "date64": pa.array([datetime.date(2020, 1, d) for d in (1, 2, 3, 4, 5, 6)], pa.date64()),
        "time32s": pa.array(n, pa.time32("s")), "time32ms": pa.array(n, pa.time32("ms")),
        "time64us": pa.array(n, pa.time64("us")), "time64ns": pa.array(n, pa.time64("ns")),
        "ts_s": pa.array(n, pa.timestamp("s")), "ts_ms_tz": pa.array(n, pa.timestamp("ms", "UTC")),
        "ts_us_tz": pa.array(n, pa.timestamp("us", "Europe/Paris")), "ts_ns": pa.array(n, pa.timestamp("ns")),
        "dur_s": pa.array(n, pa.duration("s")), "dur_ms": pa.array(n, pa.duration("ms")),
        "dur_us": pa.array(n, pa.duration("us")), "dur_ns": pa.array(n, pa.duration("ns")),
        "interval_mdn": pa.array([pa.MonthDayNano([1, 2, 3]), None, pa.MonthDayNano([0, 0, 5]), pa.MonthDayNano([4, 5, 6]),
                                  pa.MonthDayNano([7, 8, 9]), pa.MonthDayNano([-1, -2, -3])], pa.month_day_nano_interval()),
        "list": pa.array([[1, 2], None, [], [3], [4, 5, 6], [7]], pa.list_(pa.int32())),
        "large_list": pa.array([[1, 2], None, [], [3], [4, 5, 6], [7]], pa.large_list(pa.int32())),
        "list_view": pa.array([[1, 2], None, [], [3], [4, 5, 6], [7]], pa.list_view(pa.int32())),
        "large_list_view": pa.array([[1, 2], None, [], [3], [4, 5, 6], [7]], pa.large_list_view(pa.int32())),
        "fixed_list": pa.array([[1, 2], None, [3, 4], [5, 6], [7, 8], [9, 0]], pa.list_(pa.int16(), 2)),
        "struct": pa.array([{"x": 1, "y": "a"}, None, {"x": 3, "y": None}, {"x": 4, "y": "d"}, {"x": 5, "y": "e"}, {"x": 6, "y": "f"}],
                           pa.struct([("x", pa.int32()), ("y", pa.string())])),
        "map": pa.array([[("a", 1)], None, [], [("b", 2), ("c", 3)], [("d", 4)], [("e", 5)]], pa.map_(pa.string(), pa.int32())),
        "dense_union": pa.UnionArray.from_dense(pa.array([0, 1, 0, 1, 0, 1], pa.int8()), pa.array([0, 0, 1, 1, 2, 2], pa.int32()),
                                                [pa.array([1, None, 3]), pa.array(["x", "y", None])], ["i", "s"]),
        "sparse_union": pa.UnionArray.from_sparse(pa.array([0, 1, 0, 1, 0, 1], pa.int8()),
                                                  [pa.array([1, None, 3, 4, 5, 6]), pa.array(["x", "y", None, "u", "v", "w"])], ["i", "s"]),
        "dictionary": pa.array(s).dictionary_encode(),
        "run_end": pa.RunEndEncodedArray.from_arrays(pa.array([2, 4, 6], pa.int32()), pa.array([1, None, 3], pa.int64())),
        "uuid": pa.ExtensionArray.from_storage(pa.uuid(), pa.array([bytes(range(16))] * 6, pa.binary(16))),
    }
    meta = {"origin": "pyarrow"}
    batch = pa.record_batch(list(cols.values()), schema=pa.schema([pa.field(k, v.type) for k, v in cols.items()], metadata=meta))
    return batch

def nanoarrow_full(obj):
    """Validates Arrow data with nanoarrow at the strictest level its Python API exposes: na.c_array
    imports it and sets a view (nanoarrow's default validation of the whole tree: sizes, offsets,
    first/last values), then every node without children is rebuilt from its own buffers with
    c_array_from_buffers(validation_level="full") (every offset, view, UTF-8 byte...): nanoarrow
    0.9's Python API implements "full" only for nodes without children. Returns (nodes, full)."""
    array = na.c_array(obj)
    return _full(array.schema, array.view())

def _full(schema, view):
    nodes, full = 1, 0
    for i in range(view.n_children):
        n, f = _full(schema.child(i), view.child(i))
        nodes, full = nodes + n, full + f
    if view.dictionary is not None:
        n, f = _full(schema.dictionary, view.dictionary)
        nodes, full = nodes + n, full + f
    if view.n_children == 0 and schema.dictionary is None:
        c_array_from_buffers(schema, view.length, list(view.buffers), view.null_count, view.offset, (), validation_level="full")
        full += 1
    return nodes, full

def buffer_addresses(array):
    """Non-NULL addresses of every buffer of a pyarrow array (children and dictionaries included)."""
    out = {b.address for b in array.buffers() if b is not None and b.size > 0}
    if pa.types.is_dictionary(array.type):
        out |= buffer_addresses(array.dictionary)
    return out

def batch_addresses(batch):
    return [sorted(buffer_addresses(batch.column(i))) for i in range(batch.num_columns)]

def nanoarrow_stream(obj):
    """Reads a stream with nanoarrow, validating every batch as nanoarrow_full does; returns
    (batches, rows, nodes, full)."""
    stream = na.c_array_stream(obj)
    batches = rows = nodes = full = 0
    for array in stream:
        n, f = _full(array.schema, array.view())
        batches, rows, nodes, full = batches + 1, rows + array.length, nodes + n, full + f
    return batches, rows, nodes, full

def same(a, b):
    """pyarrow equality where NaN equals NaN (pyarrow's equals says NaN != NaN)."""
    return a.equals(b) or (a.schema == b.schema and repr(a.to_pylist()) == repr(b.to_pylist()))

def polars_all_types():
    """A Polars DataFrame with a column of most Polars dtypes, with nulls."""
    import datetime as dt
    return pl.DataFrame({
        "b": [True, None, False], "i8": pl.Series([1, None, 3], dtype=pl.Int8), "u16": pl.Series([1, None, 3], dtype=pl.UInt16),
        "i32": pl.Series([1, None, 3], dtype=pl.Int32), "i64": [1, None, 3], "u64": pl.Series([1, None, 3], dtype=pl.UInt64),
        "f32": pl.Series([1.5, None, 3.5], dtype=pl.Float32), "f64": [1.5, None, 3.5],
        "s": ["a", None, "a string longer than twelve"], "bin": [b"x", None, b"yz"],
        "date": [dt.date(2020, 1, 1), None, dt.date(2021, 2, 3)], "time": [dt.time(1, 2, 3), None, dt.time(4, 5, 6)],
        "ts": [dt.datetime(2020, 1, 1, 1), None, dt.datetime(2021, 1, 1)],
        "ts_tz": pl.Series([dt.datetime(2020, 1, 1), None, dt.datetime(2021, 1, 1)]).dt.replace_time_zone("Europe/Paris"),
        "dur": [dt.timedelta(seconds=5), None, dt.timedelta(days=1)],
        "dec": pl.Series(["1.25", None, "-3.50"]).cast(pl.Decimal(10, 2)),
        "cat": pl.Series(["x", None, "y"], dtype=pl.Categorical), "enum": pl.Series(["lo", None, "hi"], dtype=pl.Enum(["lo", "hi"])),
        "list": [[1, 2], None, []], "arr": pl.Series([[1, 2], None, [3, 4]], dtype=pl.Array(pl.Int32, 2)),
        "struct": [{"a": 1, "b": "x"}, None, {"a": 3, "b": None}],
    })

DUCKDB_ALL_TYPES = """select * from (values
  (true, 1::tinyint, 2::smallint, 3::integer, 4::bigint, 5::hugeint, 6::utinyint, 7::usmallint, 8::uinteger, 9::ubigint, 10::uhugeint,
   1.5::float, 2.5::double, 12.34::decimal(4, 2), 123456789.123::decimal(18, 3), 1234567890123456789.12345::decimal(38, 5),
   'short', 'a string longer than twelve bytes', 'blob'::blob, date '2020-01-02', time '01:02:03', timestamp '2020-01-02 03:04:05.678901',
   timestamptz '2020-01-02 03:04:05+00', timestamp_s '2020-01-02 03:04:05', timestamp_ms '2020-01-02 03:04:05.678', timestamp_ns '2020-01-02 03:04:05.678901234',
   interval 3 day, [1, 2, 3], [['a'], [], null], {'x': 1, 'y': 'z'}, map {'k': 1}, 'f8a3d1f4-1a2b-4c5d-8e9f-0123456789ab'::uuid,
   'b'::enum_t, [1, 2]::integer[2], 'bit string'::varchar),
  (null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
   null, null, null, null, null, null, null, null, null, null, null, null, null)
) t(bool, i8, i16, i32, i64, i128, u8, u16, u32, u64, u128, f32, f64, dec16, dec64, dec128, s_short, s_long, blob, date, time, ts,
    tstz, ts_s, ts_ms, ts_ns, itv, list, nested, struct, map, uuid, enum, arr, v)"""

def duckdb_all_types():
    con = duckdb.connect()
    con.execute("create type enum_t as enum ('a', 'b')")
    return con, con.sql(DUCKDB_ALL_TYPES)
