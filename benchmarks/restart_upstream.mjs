// The restart path through upstream's own modules, for anyone who has upstream built: the node
// side of `python -m benchmarks.restart --upstream DIR` (issue 18 item 1, "record the upstream
// figure beside it").
//
// Why a separate process: `maka-ref resolve|plan FILE` is timed end to end as a child (start,
// read, parse, decode, resolve or plan, write the answer), so upstream is timed the same way:
// this script reads the same ledger file, parses every line with JSON.parse, decodes it with
// upstream's `decodeRuntimeEvent` (packages/core runtime-event), then answers with
// `resolveRuntimeRecovery` (packages/runtime recovery-resolver) or
// `buildResumePlanFromRuntimeEvents` (packages/runtime runtime-resume), and writes the answer as
// JSON on stdout. The Python side reads the child's CPU time from wait4. It contains none of
// upstream's code: it imports the `dist/` modules of the checkout the user built, as the
// conformance adapter (examples/maka-ts-adapter) does.
//
// Usage: node restart_upstream.mjs --upstream DIR (resolve|plan) FILE
// Exit 2: a setup problem (message on stderr).

import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

function fail(message) {
  process.stderr.write(`benchmarks/restart_upstream.mjs: ${message}\n`);
  process.exit(2);
}

const argv = process.argv.slice(2);
const at = argv.indexOf("--upstream");
const root = at !== -1 ? argv[at + 1] : process.env.MAKA_UPSTREAM;
const rest = at !== -1 ? argv.filter((_, i) => i !== at && i !== at + 1) : argv;
const [command, file] = rest;
if (!root) fail("name the upstream checkout with --upstream DIR or MAKA_UPSTREAM");
if (command !== "resolve" && command !== "plan") fail(`the command is resolve or plan, not ${command}`);
if (!file) fail("name the ledger file");

function dist(pkg, name) {
  const where = path.join(root, "packages", pkg, "dist", `${name}.js`);
  if (!existsSync(where)) fail(`${where} does not exist: build upstream first (examples/maka-ts-adapter/README.md)`);
  return import(pathToFileURL(where).href);
}

const [runtimeEvent, resolver, resume] = await Promise.all([
  dist("core", "runtime-event"),
  dist("runtime", "recovery-resolver"),
  dist("runtime", "runtime-resume"),
]);

const events = [];
for (const line of readFileSync(file, "utf8").split("\n")) {
  if (line.length === 0) continue;
  events.push(runtimeEvent.decodeRuntimeEvent(JSON.parse(line)));
}
const answer = command === "resolve"
  ? resolver.resolveRuntimeRecovery(events)
  : resume.buildResumePlanFromRuntimeEvents(events, {});
process.stdout.write(`${JSON.stringify(answer)}\n`);
