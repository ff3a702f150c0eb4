// Types for scripts/console-bundle.mjs, which stays plain JavaScript so the build script and the server run from its sources both load it.

/** The page (index.html), the script, the stylesheet and the script's source map, by file name. */
export function bundleConsole(): Promise<{ name: string; bytes: Buffer }[]>;
