/**
 * Imported Arrow data, as the rest of the library names it: the handle
 * (imported_array.ts), its raw node views (raw_array.ts), and the owner
 * stamps that exports of converted data read (owner_stamp.ts). Converters
 * reach the handles' tables through batch_source.ts instead.
 */
export { ImportedArray, type ImportOptions, type ToHostOptions } from "./imported_array.ts";
export { RawArray, type TypedBuffer } from "./raw_array.ts";
export { hostAccessError } from "./host_access.ts";
export { adoptImportOwner } from "./import_structs.ts";
export { importOwnerOf, importOwnersOf } from "./owner_stamp.ts";
export { type NodeSchema } from "./node_schemas.ts";
