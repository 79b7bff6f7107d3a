/**
 * The Go Flight SQL example server (arrow-go's SQLite-backed
 * sqlite_flightsql_server, built by `setup.sh --test` with `go install`
 * into .toolchain/flightsql-server-<version>/; FLIGHTSQL_SERVER overrides
 * the binary), started on 127.0.0.1 for one test file. `stop()` kills it;
 * call it from afterAll (it also runs at process exit).
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..", "..");

export function flightSqlServerPath(): string {
  const env = readFileSync(join(root, "scripts/toolchain.env"), "utf8");
  const version = /^FLIGHTSQL_SERVER_VERSION=(\S+)/m.exec(env)![1]!;
  const path = process.env.FLIGHTSQL_SERVER ?? join(root, ".toolchain", `flightsql-server-${version}`, "sqlite_flightsql_server");
  if (!existsSync(path)) throw new Error(`${path} is missing: run bash scripts/setup.sh --test (it builds the server with go install)`);
  return path;
}

async function freePort(): Promise<number> {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host: "127.0.0.1", port }, () => {
      socket.destroy();
      done(true);
    });
    socket.on("error", () => done(false));
  });
}

export type FlightSqlServer = { uri: string; stop(): void };

export async function startFlightSql(): Promise<FlightSqlServer> {
  const port = await freePort();
  const child = spawn(flightSqlServerPath(), ["-host", "127.0.0.1", "-port", String(port)], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr!.on("data", (chunk) => (log += String(chunk)));
  const stop = (): void => {
    if (child.exitCode === null) child.kill("SIGKILL");
  };
  process.once("exit", stop);
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`the Flight SQL server exited (${child.exitCode}): ${log}`);
    if (await accepts(port)) return { uri: `grpc://127.0.0.1:${port}`, stop };
    await Bun.sleep(50);
  }
  stop();
  throw new Error(`the Flight SQL server did not listen on 127.0.0.1:${port} within 15 s: ${log}`);
}
