/**
 * The ADBC structs as the TS layer reads them (arrow-adbc's adbc.h, API
 * revision 1.1.0, 64-bit): sizes and field offsets, compared with the
 * library's manifest ("adbc_structs", zig/adbc/abi.zig) when the library
 * loads. The driver's function table is read at these offsets.
 */

/** AdbcDriver's fields in header order: two pointers of state, release,
 * the 26 functions of revision 1.0.0, then the 29 of 1.1.0. */
export const adbcDriverFields = [
  "private_data", "private_manager", "release",
  "DatabaseInit", "DatabaseNew", "DatabaseSetOption", "DatabaseRelease",
  "ConnectionCommit", "ConnectionGetInfo", "ConnectionGetObjects", "ConnectionGetTableSchema",
  "ConnectionGetTableTypes", "ConnectionInit", "ConnectionNew", "ConnectionSetOption",
  "ConnectionReadPartition", "ConnectionRelease", "ConnectionRollback",
  "StatementBind", "StatementBindStream", "StatementExecuteQuery", "StatementExecutePartitions",
  "StatementGetParameterSchema", "StatementNew", "StatementPrepare", "StatementRelease",
  "StatementSetOption", "StatementSetSqlQuery", "StatementSetSubstraitPlan",
  "ErrorGetDetailCount", "ErrorGetDetail", "ErrorFromArrayStream",
  "DatabaseGetOption", "DatabaseGetOptionBytes", "DatabaseGetOptionDouble", "DatabaseGetOptionInt",
  "DatabaseSetOptionBytes", "DatabaseSetOptionDouble", "DatabaseSetOptionInt",
  "ConnectionCancel", "ConnectionGetOption", "ConnectionGetOptionBytes", "ConnectionGetOptionDouble",
  "ConnectionGetOptionInt", "ConnectionGetStatistics", "ConnectionGetStatisticNames",
  "ConnectionSetOptionBytes", "ConnectionSetOptionDouble", "ConnectionSetOptionInt",
  "StatementCancel", "StatementExecuteSchema", "StatementGetOption", "StatementGetOptionBytes",
  "StatementGetOptionDouble", "StatementGetOptionInt", "StatementSetOptionBytes",
  "StatementSetOptionDouble", "StatementSetOptionInt",
] as const;
/** The name of a field of AdbcDriver (a function, or the state pointers). */
export type AdbcDriverField = (typeof adbcDriverFields)[number];

/** Bytes of AdbcDriver at revision 1.0.0: through StatementSetSubstraitPlan. */
export const adbcDriver100Size = 232;

export const adbcStructLayouts = {
  AdbcError: { size: 48, fields: { message: 0, vendor_code: 8, sqlstate: 12, release: 24, private_data: 32, private_driver: 40 } },
  AdbcErrorDetail: { size: 24, fields: { key: 0, value: 8, value_length: 16 } },
  /** AdbcDatabase, AdbcConnection and AdbcStatement share this shape. */
  AdbcHandle: { size: 16, fields: { private_data: 0, private_driver: 8 } },
  AdbcPartitions: { size: 40, fields: { num_partitions: 0, partitions: 8, partition_lengths: 16, private_data: 24, release: 32 } },
  AdbcDriver: { size: adbcDriverFields.length * 8, fields: Object.fromEntries(adbcDriverFields.map((name, i) => [name, i * 8])) as Record<AdbcDriverField, number> },
} as const;

/** ADBC_VERSION_1_0_0 and ADBC_VERSION_1_1_0. */
export const AdbcVersion = { v1_0_0: 1_000_000, v1_1_0: 1_001_000 } as const;
