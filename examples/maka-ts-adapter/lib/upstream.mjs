// Where upstream's built modules are, and loading them.
//
// This adapter contains none of upstream's code: it imports the modules that the user built
// from `maka-agent/maka-agent` (packages core, storage, runtime; see README.md) from the
// checkout named by `--upstream DIR` or `MAKA_UPSTREAM`. Modules that upstream does not list in
// a package's `exports` are imported by their file path inside `dist/`.

import { existsSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";

export class SetupError extends Error {}

/** The checkout root: `--upstream DIR` (first), else `MAKA_UPSTREAM`. */
export function upstreamRoot(argv = process.argv.slice(2), env = process.env) {
  let root;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--upstream") root = argv[i + 1];
    else if (argv[i].startsWith("--upstream=")) root = argv[i].slice("--upstream=".length);
  }
  root = root ?? env.MAKA_UPSTREAM;
  if (!root) throw new SetupError("name the upstream checkout with --upstream DIR or MAKA_UPSTREAM");
  root = path.resolve(root);
  for (const pkg of ["core", "storage", "runtime"]) {
    const dist = path.join(root, "packages", pkg, "dist");
    if (!existsSync(dist)) throw new SetupError(`${dist} does not exist: build upstream first (README.md)`);
  }
  return root;
}

/** `major.minor` of this Node is at least 22.19 (upstream's store uses `node:sqlite`). */
export function checkNode(version = process.versions.node) {
  const [major, minor] = version.split(".").map(Number);
  if (major < 22 || (major === 22 && minor < 19)) {
    throw new SetupError(`Node ${version} is too old: upstream needs Node >= 22.19 (node:sqlite)`);
  }
}

/** The upstream commit of the checkout (reported in the handshake and the anchor vectors). */
export function upstreamCommit(root) {
  try {
    return execFileSync("git", ["-C", root, "rev-parse", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "unknown";
  }
}

export function upstreamVersion(root) {
  try {
    return JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).version ?? "unknown";
  } catch {
    return "unknown";
  }
}

/** Imports `packages/<pkg>/dist/<file>.js` of the checkout. */
export function importDist(root, pkg, file) {
  return import(pathToFileURL(path.join(root, "packages", pkg, "dist", `${file}.js`)).href);
}

/** Every upstream module the adapter calls, loaded once. */
export async function loadUpstream(root) {
  const [runtimeEvent, canonical, argsIdentity, scanner, bundle, boundary, resolver, resume, replay] =
    await Promise.all([
      importDist(root, "core", "runtime-event"),
      importDist(root, "core", "canonical-runtime-event"),
      importDist(root, "core", "tool-args-identity"),
      importDist(root, "core", "tool-ledger-scanner"),
      importDist(root, "core", "tool-recovery-bundle"),
      importDist(root, "core", "runtime-boundary"),
      importDist(root, "runtime", "recovery-resolver"),
      importDist(root, "runtime", "runtime-resume"),
      importDist(root, "runtime", "continuation-replay"),
    ]);
  return { root, runtimeEvent, canonical, argsIdentity, scanner, bundle, boundary, resolver, resume, replay };
}
