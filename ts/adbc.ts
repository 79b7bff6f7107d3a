/**
 * bun-arrow-device/adbc: ADBC (Arrow Database Connectivity) drivers from
 * Bun. Results arrive as apache-arrow Tables over the driver's own memory;
 * parameters and ingested tables go to the driver zero-copy. docs/adbc.md
 * lists the drivers tested, the options and who owns what.
 */
export { Database, Connection, type DatabaseOptions, type IngestMode, type IngestOptions, type GetObjectsOptions, type BatchOptions, type TableLocation, type SharedConnection } from "./adbc/database.ts";
export { Statement, type Parameters, type ExecuteOptions, type Partitions } from "./adbc/statement.ts";
export { AdbcHandle, type OptionValue, type OptionKind } from "./adbc/handle.ts";
export { manifestDirectories } from "./adbc/driver.ts";
export { AdbcError, AdbcStatus, type AdbcStatusName } from "./core/errors.ts";
