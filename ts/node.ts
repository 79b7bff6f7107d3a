/**
 * What Node.js (package.json "exports", condition "node") loads instead of
 * the entry points: they use bun:ffi, which only Bun has. Without this,
 * Node stops at the first `import "bun:ffi"` with "Received protocol
 * 'bun:'", which names neither this package nor the runtime it needs.
 * Bun matches the "bun" condition first and never loads this module.
 */
throw new Error("bun-arrow-device runs on Bun (https://bun.sh) only: it loads its native library through bun:ffi, which Node.js does not have. Run this app with `bun`.");
