// The web UI's build: TypeScript and JSX into hashed static files under /ui/, written into the
// Python package (tiny_harness/a2a_gateway/webui/), which the gateway serves and the wheel ships.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const outDir = fileURLToPath(new URL("../tiny_harness/a2a_gateway/webui", import.meta.url));

export default defineConfig({
  base: "/ui/",
  build: {
    outDir,
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: true,
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
