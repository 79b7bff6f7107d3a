/**
 * Preload (`bun test --preload`) that makes every `import … from
 * "apache-arrow"` resolve to the copy installed under
 * $ARROW_DEVICE_TEST_ARROW (a folder holding node_modules/apache-arrow),
 * so that test/arrow_versions.test.ts can run conversion tests against
 * each end of the supported apache-arrow range. The library code is
 * unchanged: only the resolution of the bare specifier moves.
 */
import { plugin } from "bun";
import { join } from "node:path";

const folder = process.env.ARROW_DEVICE_TEST_ARROW;
if (!folder) throw new Error("arrow_version_preload: set ARROW_DEVICE_TEST_ARROW to a folder with node_modules/apache-arrow");
const entry = join(folder, "node_modules", "apache-arrow", "Arrow.node.mjs");

plugin({
  name: "apache-arrow version",
  setup(build) {
    build.onResolve({ filter: /^apache-arrow$/ }, () => ({ path: entry }));
  },
});
