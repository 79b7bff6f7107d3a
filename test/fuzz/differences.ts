/**
 * Where this library's `full` validation and Arrow C++'s ValidateFull
 * (26) may differ by design: each entry is a documented difference
 * (docs/validation.md) and a test of the two verdicts that recognizes it.
 * Anything else the fuzzer finds is a disagreement.
 */
export type Difference = { name: string; matches: (ours: string, arrow: string) => boolean };

export const differences: Difference[] = [
  {
    // Arrow C++ checks the values of date64 (whole days), time32/time64
    // (within one day) and decimals (within their precision); nanoarrow's
    // levels check no value of a primitive type, and Arrow's own
    // integration gold files hold date64 values that are not whole days.
    // This library accepts them.
    name: "value ranges of date64, time and decimal (Arrow C++ only)",
    matches: (ours, arrow) => ours === "ok" && /does not represent a whole number of days|is not within the acceptable range|does not fit in precision/.test(arrow),
  },
  {
    // nanoarrow (and this library) let a zero-length array omit its offsets
    // buffer (NULL); Arrow C++ 26's importer refuses any NULL buffer whose
    // computed size (offset + length + 1 offsets) is not zero.
    name: "NULL offsets of a zero-length array (nanoarrow accepts)",
    matches: (ours, arrow) => ours === "ok" && /null data pointer for a buffer with non-zero computed size/.test(arrow),
  },
  {
    // A union or run-end encoded array has no validity bitmap; the spec
    // lets any null_count be -1 ("not computed"), which Arrow C++'s
    // importer refuses for these types. Counts above 0 are refused by both.
    name: "null_count -1 of a union or run-end encoded array (spec allows)",
    matches: (ours, arrow) => ours === "ok" && /Unexpected non-zero null count for imported type (sparse_union|dense_union|run_end_encoded)/.test(arrow),
  },
  {
    // Arrow C++'s importer gives a zero-length view array an empty views
    // buffer, then its own validation rejects the C offset past it. The
    // spec sizes that buffer by offset + length: the tree is valid.
    name: "zero-length view array with an offset (Arrow C++ importer)",
    matches: (ours, arrow) => ours === "ok" && /View buffer size \(bytes\): 0 isn't large enough for length: 0 /.test(arrow),
  },
  {
    // The spec: ArrowArray.offset "MUST be 0 or positive", and null_count
    // is the number of null items (at most the length) or -1 ("not
    // computed"). Arrow C++ 26's importer takes a negative offset, or any
    // null_count of a null array (it counts every slot null), without a
    // check on some nodes; this library refuses both at every level,
    // before sizing any buffer.
    name: "negative offset or impossible null_count (spec forbids)",
    matches: (ours, arrow) => arrow === "ok" && /offset is negative|null_count is -\d+ \(must be -1 or at least 0\)|null_count \d+ exceeds length/.test(ours),
  },
  {
    // JS numbers are exact up to 2^53: this library refuses an offset +
    // length beyond it at every level (the node's offset and length reach
    // JS as numbers), even for a node that reads no buffer, such as a
    // null array. Arrow C++ takes any int64 offset on a null array.
    name: "offset + length above 2^53 (JS numbers)",
    matches: (ours, arrow) => arrow === "ok" && /offset \+ length \(\d+ \+ \d+\) is too large/.test(ours),
  },
  {
    // Buffer sizes reach JS as numbers too, and no machine holds a buffer
    // of 2^53 bytes: a tree whose last offset or variadic sizes declare
    // one is refused at every level that sizes buffers. Arrow C++ 26 takes
    // any int64 size (it sizes the data buffer from the last offset and
    // reads nothing past it).
    name: "a buffer size above 2^53 bytes (JS numbers)",
    matches: (ours, arrow) => arrow === "ok" && /would hold \d+ bytes, more than this library accepts \(2\^53\)/.test(ours),
  },
  {
    // The spec sizes a fixed-size list's child by the parent's offset +
    // length (times the list size), as nanoarrow checks; Arrow C++ 26
    // checks the child against length x size only, so it takes a sliced
    // (or zero-length, offset) parent whose child stops short.
    name: "fixed-size list child shorter than (offset + length) x size (nanoarrow refuses)",
    matches: (ours, arrow) => arrow === "ok" && /child has length \d+, less than \(offset \+ length\) \* list size/.test(ours),
  },
  {
    // A run-end encoded array has no validity bitmap: its nulls are its
    // values child's. This library refuses a null_count above 0 on it (as
    // on a union); Arrow C++ 26 takes one on some run-end encoded nodes.
    name: "positive null_count of a run-end encoded array (no nulls of its own)",
    matches: (ours, arrow) => arrow === "ok" && /null_count is \d+, but a run_end_encoded array has no nulls of its own/.test(ours),
  },
  {
    // A union's type ids name its children: one id for two children would
    // make a slot's child ambiguous. This library refuses the format;
    // Arrow C++ 26 builds the type.
    name: "a union format that repeats a type id",
    matches: (ours, arrow) => arrow === "ok" && /repeats a union type id/.test(ours),
  },
  {
    // Variadic buffer sizes are byte counts; this library refuses a
    // negative one at every level that sizes buffers. Arrow C++ 26 takes
    // it when no view reaches into that buffer.
    name: "negative variadic buffer size",
    matches: (ours, arrow) => arrow === "ok" && /variadic buffer \d+ has negative size/.test(ours),
  },
  {
    // The pre-1.0 union layout is accepted with its leading validity
    // buffer NULL only: unions have no validity bitmap, so a non-NULL one
    // has no meaning. Arrow C++ 26 ignores it.
    name: "non-NULL validity buffer of a pre-1.0 union layout",
    matches: (ours, arrow) => arrow === "ok" && /the pre-1\.0 union layout, but its validity buffer \(buffer 0\) is not NULL/.test(ours),
  },
];

/** The name of the documented difference the two verdicts follow, if any. */
export function documentedDifference(ours: string, arrow: string): string | null {
  return differences.find((d) => d.matches(ours, arrow))?.name ?? null;
}
