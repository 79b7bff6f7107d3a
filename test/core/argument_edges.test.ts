/**
 * Values that broke the argument checks' own reading: null options where
 * an object is read, a Symbol where a string is formatted, a revoked
 * Proxy whose every property read throws. Each gets InvalidArgumentError
 * naming the function and parameter.
 */
import { describe, expect, test } from "bun:test";
import { Table, makeVector } from "apache-arrow";
import { arrowProtocol } from "../../ts/index.ts";
import { platformId } from "../../ts/diagnostics.ts";
import { ArrowCArray } from "../../ts/raw.ts";
import { locatePython } from "../../ts/python.ts";

function thrown(run: () => unknown): { name: string; message: string } | null {
  try {
    run();
    return null;
  } catch (error) {
    return { name: (error as Error).name, message: (error as Error).message };
  }
}

describe("typed errors where reading the argument threw", () => {
  test("locatePython(null) and wrong option types", () => {
    expect(thrown(() => locatePython(null as never))).toEqual({ name: "InvalidArgumentError", message: "locatePython: options must be an options object or undefined, not null" });
    expect(thrown(() => locatePython({ libpython: 3 } as never))?.message).toBe("locatePython: options.libpython must be a string or undefined, not the number 3");
    expect(thrown(() => locatePython({ python: Symbol("p") } as never))?.name).toBe("InvalidArgumentError");
  });

  test("platformId(Symbol()) and a libc that is no function", () => {
    expect(thrown(() => platformId(Symbol() as never))?.name).toBe("InvalidArgumentError");
    expect(thrown(() => platformId(Symbol() as never))?.message).toStartWith("platformId: platform must be a string, not ");
    expect(thrown(() => platformId("linux", Symbol() as never))?.message).toStartWith("platformId: arch must be a string, not ");
    expect(thrown(() => platformId("linux", "x64", 1 as never))?.message).toStartWith("platformId: libc must be a function");
    expect(platformId("linux", "x64", () => "musl")).toBe("linux-x64-musl");
  });

  test("a revoked Proxy as requestedSchema", () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    const batch = new Table({ x: makeVector(Int32Array.of(1, 2, 3)) }).batches[0];
    const error = thrown(() => arrowProtocol(batch)[ArrowCArray]!({ requestedSchema: proxy as never }));
    expect(error?.name).toBe("InvalidArgumentError");
    expect(error?.message).toStartWith("requestedSchema cannot be read (");
  });
});
