/**
 * The CLI's file input and output, bounded and with one-line errors: every
 * file a command reads has a size limit (a device like /dev/zero or an
 * endless pipe is refused once it passes the limit, never read until
 * memory runs out), and every failure to read or write is a `FileError`
 * naming the path and the reason, which the CLI prints on one line.
 */
import { closeSync, fstatSync, openSync, readSync, statSync, writeSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** A file the command could not read or write: exit code 1, one line. */
export class FileError extends Error {
  override name = "FileError";
}

/** "ENOENT: no such file or directory, open 'x'" -> "no such file or directory". */
function systemReason(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown };
  const message = typeof e?.message === "string" ? e.message : String(error);
  const bare = message.replace(/^[A-Z]+: /, "").replace(/, [a-z]+( '.*')?$/s, "").split("\n")[0];
  return typeof e?.code === "string" ? `${bare} (${e.code})` : bare;
}

/** 1536 -> "1.5 KiB". */
function bytesText(bytes: number): string {
  if (bytes >= 2 ** 20) return `${+(bytes / 2 ** 20).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${+(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}

/**
 * The text of `path`, at most `limit` bytes. A regular file larger than
 * the limit is refused before reading; a pipe or device is read until it
 * ends or passes the limit.
 */
export function readBounded(path: string, limit: number, what: string): string {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (error) {
    throw new FileError(`cannot read ${what} ${path}: ${systemReason(error)}`);
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) throw new FileError(`cannot read ${what} ${path}: it is a directory`);
    if (stat.isFile() && stat.size > limit) {
      throw new FileError(`${what} ${path} is ${bytesText(stat.size)}, more than the ${bytesText(limit)} this command reads`);
    }
    const buffer = new Uint8Array(stat.isFile() ? stat.size + 1 : Math.min(limit + 1, 1 << 20));
    let length = 0;
    let grown = buffer;
    for (;;) {
      if (length === grown.length) {
        if (length > limit) break;
        const next = new Uint8Array(Math.min(limit + 1, grown.length * 2));
        next.set(grown);
        grown = next;
      }
      let n: number;
      try {
        n = readSync(fd, grown, length, grown.length - length, null);
      } catch (error) {
        throw new FileError(`cannot read ${what} ${path}: ${systemReason(error)}`);
      }
      if (n === 0) break;
      length += n;
    }
    if (length > limit) throw new FileError(`${what} ${path} is more than the ${bytesText(limit)} this command reads`);
    return new TextDecoder().decode(grown.subarray(0, length));
  } finally {
    closeSync(fd);
  }
}

/**
 * Checks, before a long run, that `path` can be written: not a directory,
 * and its directory exists. (Whether the bytes fit is known only when
 * they are written: see `writeText`.)
 */
export function checkWritable(path: string, what: string): void {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    stat = null;
  }
  if (stat?.isDirectory()) throw new FileError(`cannot write ${what} ${path}: it is a directory`);
  if (stat === null) {
    const parent = dirname(resolve(path));
    let parentStat;
    try {
      parentStat = statSync(parent);
    } catch {
      throw new FileError(`cannot write ${what} ${path}: the directory ${parent} does not exist`);
    }
    if (!parentStat.isDirectory()) throw new FileError(`cannot write ${what} ${path}: ${parent} is not a directory`);
  }
}

/** Writes `text` to `path` (created or truncated), all of it or a FileError. */
export function writeText(path: string, text: string, what: string): void {
  checkWritable(path, what);
  let fd: number;
  try {
    fd = openSync(path, "w");
  } catch (error) {
    throw new FileError(`cannot write ${what} ${path}: ${systemReason(error)}`);
  }
  try {
    const bytes = new TextEncoder().encode(text);
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
  } catch (error) {
    throw new FileError(`cannot write ${what} ${path}: ${systemReason(error)}`);
  } finally {
    closeSync(fd);
  }
}
