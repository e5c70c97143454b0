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
    // React, the A2A SDK and Ariakit make one ~500 kB chunk (~145 kB gzipped); see
    // docs/design/web-ui.md for what each costs. Warn when it grows past that.
    chunkSizeWarningLimit: 560,
    rollupOptions: {
      onwarn(warning, warn) {
        // Ariakit marks its modules "use client" (for React Server Components), which has no
        // meaning in a browser bundle.
        if (warning.code === "MODULE_LEVEL_DIRECTIVE") return;
        warn(warning);
      },
    },
  },
  test: {
    include: ["src/**/*.test.ts"],
    environment: "node",
  },
});
