// T1 + T2 through upstream's own store (node:sqlite) against a raw node:sqlite commit, for
// anyone who has upstream built: the node side of `python -m benchmarks.durable --upstream DIR`.
//
// Why beside the Python benchmark: the durable ratio of the reference (tool calls/s ÷ raw
// commits/s) is only comparable with upstream's when both are measured the same way, on the
// same disk, in the same minutes. This script contains none of upstream's code: it imports
// the storage package the user built (`packages/storage/dist/index.js` of the checkout, the
// module the conformance adapter uses too) and calls its public `commitToolPrepared` /
// `commitToolOutcome`. The calls are the very inputs the Python side times (written to a JSON
// file by `benchmarks._durable.upstream`), so both stores write the same events.
//
// Method (as the Python side): a warm-up of raw commits and store calls, then rounds of
// interleaved slices (raw commits, then store calls) so both see the same disk phase; the
// ratio is median(tool calls/s) ÷ median(raw commits/s). The raw commit is `BEGIN IMMEDIATE;
// INSERT; COMMIT` of a row the size of the call event on a `node:sqlite` connection with
// `journal_mode=WAL` and `synchronous=FULL`.
//
// Usage: node upstream.mjs --upstream DIR --inputs FILE --dir DIR [--rounds N --slices N
//        --calls-per-slice N --commits-per-slice N --warmup-calls N --warmup-commits N]
// Prints one JSON object on stdout. Exit 2: setup problem (message on stderr).

import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

function arg(name, fallback) {
  const argv = process.argv.slice(2);
  const at = argv.indexOf(`--${name}`);
  if (at !== -1 && at + 1 < argv.length) return argv[at + 1];
  return fallback;
}

function fail(message) {
  process.stderr.write(`benchmarks/_durable/upstream.mjs: ${message}\n`);
  process.exit(2);
}

const root = arg("upstream", process.env.MAKA_UPSTREAM);
if (!root) fail("name the upstream checkout with --upstream DIR or MAKA_UPSTREAM");
const inputsFile = arg("inputs");
if (!inputsFile) fail("--inputs FILE is required (written by python -m benchmarks.durable --upstream DIR)");
const workDir = arg("dir");
if (!workDir) fail("--dir DIR is required");
const rounds = Number(arg("rounds", "5"));
const slices = Number(arg("slices", "30"));
const callsPerSlice = Number(arg("calls-per-slice", "10"));
const commitsPerSlice = Number(arg("commits-per-slice", "20"));
const warmupCalls = Number(arg("warmup-calls", "300"));
const warmupCommits = Number(arg("warmup-commits", "2000"));

let sqlite;
let storage;
try {
  sqlite = await import("node:sqlite");
} catch (error) {
  fail(`node:sqlite is not available in Node ${process.versions.node} (upstream needs Node >= 22.19): ${error}`);
}
try {
  storage = await import(pathToFileURL(path.join(path.resolve(root), "packages", "storage", "dist", "index.js")).href);
} catch (error) {
  fail(`cannot import upstream's storage package from ${root} (build upstream first): ${error}`);
}

const calls = JSON.parse(readFileSync(inputsFile, "utf8"));
const needed = warmupCalls + rounds * slices * callsPerSlice;
if (calls.length < needed) fail(`the inputs file holds ${calls.length} calls, ${needed} are needed`);

// -- raw commits -------------------------------------------------------------------------------
mkdirSync(path.join(workDir, "raw"), { recursive: true });
const raw = new sqlite.DatabaseSync(path.join(workDir, "raw", "raw.sqlite"));
raw.exec("PRAGMA journal_mode=WAL");
raw.exec("PRAGMA synchronous=FULL");
raw.exec("CREATE TABLE IF NOT EXISTS raw_commits (seq INTEGER PRIMARY KEY, payload TEXT NOT NULL)");
const mode = raw.prepare("PRAGMA journal_mode").get();
const sync = raw.prepare("PRAGMA synchronous").get();
if (String(Object.values(mode)[0]).toLowerCase() !== "wal" || Number(Object.values(sync)[0]) !== 2) {
  fail(`unexpected raw pragmas: ${JSON.stringify(mode)} ${JSON.stringify(sync)}`);
}
const payload = "x".repeat(JSON.stringify(calls[0].t1.runtimeEvent).length);
const insert = raw.prepare("INSERT INTO raw_commits (payload) VALUES (?)");

function timed(count, body) {
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  return Promise.resolve(body()).then(() => {
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    return { count, wall, cpu: (cpu.user + cpu.system) / 1e6 };
  });
}

function rawRun(count) {
  return timed(count, () => {
    for (let i = 0; i < count; i++) {
      raw.exec("BEGIN IMMEDIATE");
      insert.run(payload);
      raw.exec("COMMIT");
    }
  });
}

// -- upstream's store ---------------------------------------------------------------------------
const workspace = path.join(workDir, "workspace");
mkdirSync(workspace, { recursive: true });
const store = storage.createWorkspaceRuntimeStore(workspace);
let next = 0;

function storeRun(count) {
  const slice = calls.slice(next, next + count);
  next += count;
  return timed(count, async () => {
    for (const call of slice) {
      const prepared = await store.commitToolPrepared(call.t1);
      const outcome = await store.commitToolOutcome(call.t2);
      if (!prepared.created || !outcome.created) throw new Error("benchmark call was not created");
    }
  });
}

const add = (a, b) => (a ? { count: a.count + b.count, wall: a.wall + b.wall, cpu: a.cpu + b.cpu } : b);
const median = (values) => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

try {
  await rawRun(warmupCommits);
  await storeRun(warmupCalls);
  const perRound = [];
  for (let r = 0; r < rounds; r++) {
    let rawTotal;
    let storeTotal;
    for (let s = 0; s < slices; s++) {
      rawTotal = add(rawTotal, await rawRun(commitsPerSlice));
      storeTotal = add(storeTotal, await storeRun(callsPerSlice));
    }
    perRound.push({ raw: rawTotal, store: storeTotal });
  }
  const summary = (key) => ({
    medianRate: median(perRound.map((r) => r[key].count / r[key].wall)),
    medianWallMs: median(perRound.map((r) => (r[key].wall / r[key].count) * 1e3)),
    medianCpuMs: median(perRound.map((r) => (r[key].cpu / r[key].count) * 1e3)),
  });
  const rawSummary = summary("raw");
  const storeSummary = summary("store");
  process.stdout.write(JSON.stringify({
    node: process.versions.node,
    sqlite: Object.values(raw.prepare("SELECT sqlite_version()").get())[0],
    raw: rawSummary,
    store: storeSummary,
    ratio: storeSummary.medianRate / rawSummary.medianRate,
    perRoundRatios: perRound.map((r) => (r.store.count / r.store.wall) / (r.raw.count / r.raw.wall)),
  }) + "\n");
} finally {
  store.close?.();
  raw.close();
}
