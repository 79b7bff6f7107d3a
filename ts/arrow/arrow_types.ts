/**
 * The apache-arrow types the layers above this one name in their
 * signatures (only ts/arrow/ imports apache-arrow).
 */
export type { RecordBatch, Schema, Table } from "apache-arrow";
