/**
 * Preloaded for every test (bunfig.toml): before each test, the live
 * counts that leak checks compare against are settled and taken as that
 * test's baseline (test/helpers/leaks.ts). A test that leaks fails alone.
 */
import { beforeEach } from "bun:test";
import { takeBaseline } from "./leaks.ts";

beforeEach(async () => {
  await takeBaseline();
});
