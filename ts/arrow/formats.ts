/**
 * apache-arrow DataType -> C Data Interface format string (the export
 * direction). The import direction lives in arrow/types.ts.
 */
import {
  DataType, DateUnit, IntervalUnit, Precision, TimeUnit, Type, UnionMode,
  type Date_, type Decimal, type Dictionary, type Duration, type FixedSizeBinary, type FixedSizeList, type Float,
  type Int, type Interval, type Time, type Timestamp, type Union,
} from "apache-arrow";
import { Status, UnsupportedError } from "../core/errors.ts";
import { arrowKindError, isDataType } from "./arrow_args.ts";

const unitChar: Record<number, string> = {
  [TimeUnit.SECOND]: "s",
  [TimeUnit.MILLISECOND]: "m",
  [TimeUnit.MICROSECOND]: "u",
  [TimeUnit.NANOSECOND]: "n",
};

function intFormat(type: Int): string {
  const signed = type.isSigned;
  switch (type.bitWidth) {
    case 8: return signed ? "c" : "C";
    case 16: return signed ? "s" : "S";
    case 32: return signed ? "i" : "I";
    case 64: return signed ? "l" : "L";
  }
  throw new UnsupportedError(Status.unsupported, `integer bit width ${type.bitWidth} has no format`);
}

/** The format string of `type`; for a dictionary, that of its indices. */
export function formatOf(type: DataType): string {
  if (!isDataType(type)) throw arrowKindError("formatOf", "type", type, ["DataType"]);
  switch (type.typeId) {
    case Type.Null: return "n";
    case Type.Bool: return "b";
    case Type.Int: return intFormat(type as Int);
    case Type.Float: {
      const precision = (type as Float).precision;
      return precision === Precision.HALF ? "e" : precision === Precision.SINGLE ? "f" : "g";
    }
    case Type.Binary: return "z";
    case Type.LargeBinary: return "Z";
    case Type.BinaryView: return "vz";
    case Type.Utf8: return "u";
    case Type.LargeUtf8: return "U";
    case Type.Utf8View: return "vu";
    case Type.Decimal: {
      const { precision, scale, bitWidth } = type as Decimal;
      return bitWidth === 128 ? `d:${precision},${scale}` : `d:${precision},${scale},${bitWidth}`;
    }
    case Type.FixedSizeBinary: return `w:${(type as FixedSizeBinary).byteWidth}`;
    case Type.Date: return (type as Date_).unit === DateUnit.DAY ? "tdD" : "tdm";
    case Type.Time: return `tt${unitChar[(type as Time).unit]}`;
    case Type.Timestamp: {
      const { unit, timezone } = type as Timestamp;
      return `ts${unitChar[unit]}:${timezone ?? ""}`;
    }
    case Type.Duration: return `tD${unitChar[(type as Duration).unit]}`;
    case Type.Interval: {
      const unit = (type as Interval).unit;
      return unit === IntervalUnit.YEAR_MONTH ? "tiM" : unit === IntervalUnit.DAY_TIME ? "tiD" : "tin";
    }
    case Type.List: return "+l";
    case Type.LargeList: return "+L";
    case Type.FixedSizeList: return `+w:${(type as FixedSizeList).listSize}`;
    case Type.Struct: return "+s";
    case Type.Map: return "+m";
    case Type.Union: {
      const union = type as Union;
      return `${union.mode === UnionMode.Dense ? "+ud" : "+us"}:${Array.from(union.typeIds).join(",")}`;
    }
    case Type.Dictionary: return intFormat((type as Dictionary).indices);
  }
  throw new UnsupportedError(Status.unsupported, `apache-arrow type id ${type.typeId} has no C Data Interface format`);
}
