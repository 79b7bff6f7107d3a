/**
 * A throwaway PostgreSQL server for the ADBC tests: the machine's own
 * binaries (/usr/lib/postgresql/<version>/bin; setup.sh --test installs
 * Debian's `postgresql` when absent), a cluster in a temporary folder,
 * listening on 127.0.0.1 and a Unix socket in that folder only, trust
 * authentication for the `postgres` role. PostgreSQL refuses to run as
 * root: as root, the server runs as a dedicated user without a home
 * (created once, `useradd -M`). `stop()` stops it and removes the folder;
 * call it from afterAll (it also runs at process exit).
 */
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const serverUser = "bad_pg_test";

function binDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "pg_ctl"))) : [];
  if (versions.length === 0) throw new Error(`no PostgreSQL server binaries under ${root}: run bash scripts/setup.sh --test (as root it installs Debian's postgresql)`);
  versions.sort((a, b) => Number(b) - Number(a));
  return join(root, versions[0]!, "bin");
}

function run(command: string[], asUser: string | null): void {
  const argv = asUser === null ? command : ["runuser", "-u", asUser, "--", ...command];
  const result = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", timeout: 60_000 });
  if (result.status !== 0) throw new Error(`${command.join(" ")} failed (${result.status}): ${result.stderr || result.stdout}`);
}

async function freePort(): Promise<number> {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}

export type PostgresServer = { uri: string; stop(): void };

export async function startPostgres(): Promise<PostgresServer> {
  const bin = binDir();
  const root = process.getuid?.() === 0;
  const user = root ? serverUser : null;
  if (root && spawnSync("id", ["-u", serverUser]).status !== 0) run(["useradd", "-M", "-r", "-s", "/usr/sbin/nologin", serverUser], null);
  const dir = mkdtempSync(join(tmpdir(), "bad-pg-"));
  chmodSync(dir, 0o700);
  if (root) {
    const uid = Number(spawnSync("id", ["-u", serverUser], { encoding: "utf8" }).stdout.trim());
    const gid = Number(spawnSync("id", ["-g", serverUser], { encoding: "utf8" }).stdout.trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  let started = false;
  const stop = (): void => {
    if (started) {
      started = false;
      try {
        run([join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"], user);
      } catch {
        // Already stopped: nothing to do but remove the folder.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", stop);
  try {
    run([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"], user);
    const port = await freePort();
    run([join(bin, "pg_ctl"), "-D", data, "-o", `-k ${dir} -p ${port} -h 127.0.0.1 -c fsync=off`, "-l", join(dir, "log"), "-w", "start"], user);
    started = true;
    return { uri: `postgresql://postgres@127.0.0.1:${port}/postgres`, stop };
  } catch (error) {
    stop();
    throw error;
  }
}
